import { Migration } from '@mikro-orm/migrations';

/**
 * Host search:
 * - `saved_searches`: PQL queries users keep, private or shared. The owner is a user id of the identity domain; no
 *   foreign key across domains (users are disabled, never deleted).
 * - `pql_version_key(text)`: a byte string whose order is Debian's version order (dpkg --compare-versions): epoch, then
 *   upstream version, then revision; within each, runs of non-digits compare character by character with `~` before
 *   everything (even the end), then letters, then other characters; runs of digits compare as numbers. Encoding: the
 *   epoch as a length-prefixed number; for each (non-digits, digits) pair of a part, the non-digits mapped so that byte
 *   order is dpkg's (`~` → 0x01, letters as they are, other characters above letters), a 0x02 terminator, then the
 *   number without leading zeros prefixed by its length; each part ends with a 0x02 (an empty run of non-digits, which
 *   sorts after `~` and before any character, as dpkg's end of string does). No key is a prefix of another, so keys
 *   compare with plain byte order (bytea) and can be indexed. IMMUTABLE: a constant argument is folded once per query.
 * - `host_packages.version_key`: the stored key of each package version (NULL when the version is empty), with a
 *   covering index on (name, version_key) including host_id, so `package[name = "openssl" AND version < "3.0.13"]`
 *   reads one index range and no table rows. A generated column: the inventory ingest writes packages as before; adding
 *   it rewrites host_packages once.
 * - search indexes: services by (name, host_id), covering `service.name = ...` and its negation; hosts in the order
 *   of search pages (lower(hostname) in byte order), which also serves case-insensitive hostname globs and names.
 */
export class Migration0009_saved_searches extends Migration {
  override up(): void {
    this.addSql(`
      CREATE TABLE saved_searches (
        id uuid PRIMARY KEY,
        user_id uuid NOT NULL,
        name text NOT NULL,
        query text NOT NULL,
        description text NOT NULL DEFAULT '',
        is_shared boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX saved_searches_user_idx ON saved_searches (user_id);
      CREATE INDEX saved_searches_shared_idx ON saved_searches (is_shared) WHERE is_shared;

      CREATE FUNCTION pql_version_part(p text) RETURNS text LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
      DECLARE
        acc text := '';
        rest text := p;
        nd text;
        num text;
      BEGIN
        LOOP
          nd := substring(rest FROM '^[^0-9]*');
          rest := substr(rest, length(nd) + 1);
          num := substring(rest FROM '^[0-9]*');
          rest := substr(rest, length(num) + 1);
          num := ltrim(num, '0');
          -- '~' first, letters as they are, the other ASCII punctuation above letters, in ASCII order.
          acc := acc || translate(nd, '~!"#$%&''()*+,-./:;<=>?@[\\]^_\`{|}', U&'\\0001\\00A1\\00A2\\00A3\\00A4\\00A5\\00A6\\00A7\\00A8\\00A9\\00AA\\00AB\\00AC\\00AD\\00AE\\00AF\\00B0\\00B1\\00B2\\00B3\\00B4\\00B5\\00B6\\00B7\\00B8\\00B9\\00BA\\00BB\\00BC\\00BD\\00BE\\00BF')
                     || chr(2) || chr(48 + least(length(num), 70)) || num;
          EXIT WHEN rest = '';
        END LOOP;
        RETURN acc || chr(2);
      END
      $fn$;

      CREATE FUNCTION pql_version_key(v text) RETURNS bytea LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
      DECLARE
        epoch text;
        rest text := v;
        revision text := '';
        i int;
      BEGIN
        epoch := substring(v FROM '^([0-9]+):');
        IF epoch IS NOT NULL THEN
          rest := substr(v, length(epoch) + 2);
          epoch := ltrim(epoch, '0');
        ELSE
          epoch := '';
        END IF;
        -- The revision follows the last hyphen.
        i := strpos(reverse(rest), '-');
        IF i > 0 THEN
          revision := right(rest, i - 1);
          rest := left(rest, length(rest) - i);
        END IF;
        RETURN convert_to(chr(48 + least(length(epoch), 70)) || epoch || pql_version_part(rest) || pql_version_part(revision), 'UTF8');
      END
      $fn$;

      -- NULL for an empty (unreported) version: it has no place in the order.
      ALTER TABLE host_packages ADD COLUMN version_key bytea GENERATED ALWAYS AS (CASE WHEN version = '' THEN NULL ELSE pql_version_key(version) END) STORED;
      -- Covering indexes: a package or service condition reads the index only (its host ids), never the wide rows.
      CREATE INDEX host_packages_search_idx ON host_packages (name, version_key) INCLUDE (host_id);
      CREATE INDEX host_services_search_idx ON host_services (name, host_id);
      -- Search pages are in this order (hostname case-insensitively, byte order): the first page of a broad query walks
      -- it and stops early; a hostname glob with a literal prefix (lower(hostname) LIKE 'web-%', C collation) or an
      -- exact hostname reads a range of it.
      CREATE INDEX hosts_search_idx ON hosts ((lower(hostname)) COLLATE "C", hostname COLLATE "C", id);
    `);
  }

  override down(): void {
    this.addSql(`
      DROP INDEX IF EXISTS hosts_search_idx;
      DROP INDEX IF EXISTS host_services_search_idx;
      DROP INDEX IF EXISTS host_packages_search_idx;
      ALTER TABLE host_packages DROP COLUMN IF EXISTS version_key;
      DROP FUNCTION IF EXISTS pql_version_key(text);
      DROP FUNCTION IF EXISTS pql_version_part(text);
      DROP TABLE IF EXISTS saved_searches;
    `);
  }
}
