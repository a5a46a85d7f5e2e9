insert
