SELECT "select" "as", "x""y" FROM "where"
