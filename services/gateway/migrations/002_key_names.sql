-- A label the user gives a key ("laptop", "phone") to tell it apart; optional.
ALTER TABLE gateway.api_keys ADD COLUMN name text;
