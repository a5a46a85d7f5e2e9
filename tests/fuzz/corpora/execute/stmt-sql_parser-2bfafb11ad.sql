drop stream if exists vwap
