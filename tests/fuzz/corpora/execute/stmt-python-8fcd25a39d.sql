with
