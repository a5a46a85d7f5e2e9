show streams
