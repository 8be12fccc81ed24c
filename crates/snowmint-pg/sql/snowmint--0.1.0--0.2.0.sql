-- snowmint 0.1.0 -> 0.2.0: each database's WAL-logged mark (issue 42). nextval() refuses in a
-- database without it, naming it; ALTER EXTENSION snowmint UPDATE creates it.
CREATE SEQUENCE snowmint.mark MINVALUE 0 START 0 NO CYCLE;
COMMENT ON SEQUENCE snowmint.mark IS
    'snowmint''s mark in this database (Unix ms): at or above the time of every ID nextval returned here';
REVOKE ALL ON SEQUENCE snowmint.mark FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('snowmint.mark', '');
