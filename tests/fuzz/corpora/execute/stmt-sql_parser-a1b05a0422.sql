SELECT a /* inline */, -- trailing
  b FROM t
