select
