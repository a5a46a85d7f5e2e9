CREATE SOURCE "My Source" ("first name" VARCHAR, "say ""hi""" INT, "from" INT, "Mixed" BIGINT)
