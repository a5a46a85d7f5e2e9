;;;  -- only comments
/* and */ ;