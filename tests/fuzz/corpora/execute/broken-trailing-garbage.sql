SHOW STREAMS; $$$ ;; ) (
