create view v as select a from s emit final
