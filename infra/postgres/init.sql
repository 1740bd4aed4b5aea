-- Runs once, when the postgres volume is first initialised (docker-entrypoint-initdb.d).
-- pgvector ships in the pgvector/pgvector image; the services' migrations rely on it.
CREATE EXTENSION IF NOT EXISTS vector;
