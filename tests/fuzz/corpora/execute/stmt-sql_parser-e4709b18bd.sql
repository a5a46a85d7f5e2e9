SELECT 'éé', ? FROM t
