create or replace source if not exists "Ticks" (
  watermark for ts, ts timestamp, v double)
with (buffer_size = 1024, 'connector' = 'kafka', kafka.Topic = 'x''y', lag = INTERVAL '2 minutes', ratio = -0.5, on_error = ${MODE}, strict = true)
