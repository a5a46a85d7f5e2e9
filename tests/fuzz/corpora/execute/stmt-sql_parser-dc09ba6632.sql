SELECT a FROM select
