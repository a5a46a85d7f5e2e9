CREATE SINK out1 FROM vwap WITH (path = '/tmp/x')
