-- name, input, plan
DESCRIBE name
