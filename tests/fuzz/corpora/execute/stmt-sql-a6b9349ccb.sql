-- its subscriptions end (LDB-4001 once drained)
SHOW SOURCES
