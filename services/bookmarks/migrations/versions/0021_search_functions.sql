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
