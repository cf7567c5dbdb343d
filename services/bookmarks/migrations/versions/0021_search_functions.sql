CREATE OR REPLACE FUNCTION search_stems(cfg regconfig, t text) RETURNS tsvector
LANGUAGE sql STABLE PARALLEL SAFE AS $f$
  SELECT CASE WHEN cfg = 'simple'::regconfig THEN ''::tsvector ELSE coalesce(
    (SELECT array_to_tsvector(array_agg(cfg::text || ':' || lexeme))
     FROM unnest(tsvector_to_array(to_tsvector(cfg, t))) AS lexeme), ''::tsvector) END
$f$;
CREATE OR REPLACE FUNCTION search_fields_vector(cfg regconfig, a text, b text, c text) RETURNS tsvector
LANGUAGE sql STABLE PARALLEL SAFE AS $f$
  SELECT ts_delete(setweight(to_tsvector('simple', a), 'A') || to_tsvector('simple', ' 90210902109021090210 90210902109021090210 90210902109021090210 90210902109021090210 90210902109021090210 90210902109021090210 90210902109021090210 90210902109021090210 ') || setweight(to_tsvector('simple', b), 'B') || to_tsvector('simple', ' 90210902109021090210 90210902109021090210 90210902109021090210 90210902109021090210 90210902109021090210 90210902109021090210 90210902109021090210 90210902109021090210 ')
    || setweight(to_tsvector('simple', c), 'C'), '90210902109021090210') || search_stems(cfg, (a || b || c))
$f$;
CREATE OR REPLACE FUNCTION search_head_vector(cfg regconfig, a text) RETURNS tsvector
LANGUAGE sql STABLE PARALLEL SAFE AS $f$
  SELECT ts_delete(setweight(to_tsvector('simple', a), 'A'), '90210902109021090210') || search_stems(cfg, a)
$f$;
CREATE OR REPLACE FUNCTION search_page_vector(cfg regconfig, p text) RETURNS tsvector
LANGUAGE sql STABLE PARALLEL SAFE AS $f$
  SELECT ts_delete(to_tsvector('simple', ' 90210902109021090210 90210902109021090210 90210902109021090210 90210902109021090210 90210902109021090210 90210902109021090210 90210902109021090210 90210902109021090210 ') || setweight(to_tsvector('simple', p), 'C'), '90210902109021090210') || search_stems(cfg, p)
$f$;
CREATE OR REPLACE FUNCTION search_full_vector(fields tsvector, highlights tsvector, page tsvector)
RETURNS tsvector LANGUAGE plpgsql IMMUTABLE AS $f$
BEGIN
  IF highlights = ''::tsvector AND page = ''::tsvector THEN
    RETURN fields;
  END IF;
  BEGIN
    RETURN fields || highlights || page;
  EXCEPTION WHEN program_limit_exceeded THEN
    BEGIN
      RETURN fields || highlights;
    EXCEPTION WHEN program_limit_exceeded THEN
      RETURN fields;
    END;
  END;
END
$f$;
