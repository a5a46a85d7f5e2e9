DESCRIBE nothing
