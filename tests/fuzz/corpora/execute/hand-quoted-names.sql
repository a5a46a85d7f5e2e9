CREATE STREAM "Odd ""name"" é" AS SELECT symbol AS "SELECT", price AS "p" FROM trades; DESCRIBE "Odd ""name"" é"
