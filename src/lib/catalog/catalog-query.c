/* catalog-query.c — reading the catalog: the lists of every level (remotes down to shards, jobs, models), full-text search, and locating a row's store, dataset and version. */
#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"

/* ---- listings ------------------------------------------------------------------- */

/* A level's listing: ncols text columns after the row id (matorage-catalog.h
 * names them), from one query. */
struct level {
	size_t ncols;
	const char *sql; /* ?1 parent id, ?2 the filter as a LIKE pattern (NULL: none) */
};

#define LIKE_FILTER(cols) " AND (?2 IS NULL OR " cols ")"

/* A version's protection as "K+M" (p: the table's prefix); '?' when its
 * record could not be read, NULL when it has none. */
#define PROTECTION(p) \
	"CASE WHEN " p "protect_k > 0 THEN " p "protect_k || '+' || " p "protect_m" \
	" WHEN " p "protect_k < 0 THEN '?' END"

/* The state of check k of version v, as it stands now: health is kept per
 * shard object, so when every object k found damaged is a shard of v that
 * a later repair rebuilt (of v, or of another version sharing it), v is
 * rebuilt without a check of its own. */
#define CHECK_STATE(k)                                                                      \
	"CASE WHEN " k "state <> 'sound' AND " k "damaged > 0 AND " k "damaged <= (SELECT"  \
	" count(DISTINCT s.sha256) FROM shards s WHERE s.list_id = v.shard_list AND s.idx <" \
	" v.nshards AND s.health = 'rebuilt' AND s.health_at >= " k "at) AND NOT EXISTS"     \
	" (SELECT 1 FROM shards s WHERE s.list_id = v.shard_list AND s.idx < v.nshards AND"  \
	" s.health IN ('damaged', 'unrepairable', 'repairable') AND s.health_at >= " k "at)" \
	" THEN 'rebuilt' ELSE " k "state END"

/* The worst health recorded on version v's shard objects, as a rank (4
 * unrepairable, 3 damaged, 2 repairable; NULL when none is damaged).
 * Health is kept per object: damage found through any version listing an
 * object shows on every version that lists it, and a repair through any
 * of them (or a check finding it sound) clears it for all.  One probe of
 * the partial index shards_bad per version, which holds damaged rows only. */
#define SHARD_RANK_ONLY                                                                     \
	"(SELECT max(CASE s.health WHEN 'unrepairable' THEN 4 WHEN 'damaged' THEN 3 ELSE 2"  \
	" END) FROM shards s WHERE s.list_id = v.shard_list AND s.idx < v.nshards AND"      \
	" " MTI_CAT_SHARD_BAD("s.") ")"
/* The same of version v's fragments (a format-2 manifest's): one missing
 * or damaged leaves rows unknown, as a damaged shard does.  One probe of
 * the partial index fragments_bad. */
#define FRAG_RANK                                                                           \
	"(SELECT max(CASE f.health WHEN 'unrepairable' THEN 4 WHEN 'repairable' THEN 2 ELSE 3" \
	" END) FROM fragments f WHERE f.version_id = v.id AND " MTI_CAT_FRAG_BAD("f.") ")"
/* The worse of the two; NULL when nothing is recorded bad. */
#define SHARD_RANK "nullif(max(coalesce(" SHARD_RANK_ONLY ", 0), coalesce(" FRAG_RANK ", 0)), 0)"
/* Version v's bad fragments as "fragment 2 (rows 200..299) missing, ...". */
#define FRAG_BAD_LIST                                                                       \
	"(SELECT group_concat('fragment ' || f.idx || ' (rows ' || f.first_row || '..' ||"   \
	" (f.first_row + f.rows - (f.rows > 0)) || ') ' || f.health, ', ') FROM fragments f"  \
	" WHERE f.version_id = v.id AND " MTI_CAT_FRAG_BAD("f.") ")"
/* A state's rank, as SHARD_RANK has it (0 for any other state). */
#define STATE_RANK(x)                                                                       \
	"CASE " x " WHEN 'unrepairable' THEN 4 WHEN 'damaged' THEN 3 WHEN 'repairable' THEN 2" \
	" ELSE 0 END"
#define RANK_STATE(x) "CASE " x " WHEN 4 THEN 'unrepairable' WHEN 3 THEN 'damaged' WHEN 2 THEN 'repairable' END"

/* Version v's state: its last check's (CHECK_STATE), unless its shard
 * objects are recorded worse since (SHARD_RANK); NULL when it was never
 * checked and none of its shards is damaged. */
#define VERSION_STATE                                                                       \
	"coalesce((SELECT CASE WHEN coalesce(" SHARD_RANK ", 0) > " STATE_RANK(CHECK_STATE("k.")) \
	" THEN " RANK_STATE(SHARD_RANK) " ELSE " CHECK_STATE("k.") " END FROM checks k WHERE"  \
	" k.version_id = v.id ORDER BY k.id DESC LIMIT 1), " RANK_STATE(SHARD_RANK) ")"

/* A version's last check (its state, and from what or what is lost), what
 * that check was, and its last repair, as text. */
#define CHECK_FIELDS                                                                        \
	"CASE WHEN v.manifest_size = -2 THEN 'lost: its manifest (another store holds the"   \
	" version: repair brings it back)' WHEN v.manifest_size < 0 THEN 'lost: its"         \
	" manifest (its protection record holds a copy: repair writes it back)' WHEN"       \
	" coalesce(" SHARD_RANK ", 0) > coalesce((SELECT " STATE_RANK(CHECK_STATE("k.")) " FROM" \
	" checks k WHERE k.version_id = v.id ORDER BY k.id DESC LIMIT 1), 0) THEN "          \
	RANK_STATE(SHARD_RANK) " || ': ' || coalesce(" FRAG_BAD_LIST " || CASE WHEN"          \
	" coalesce(" SHARD_RANK_ONLY ", 0) > 0 THEN '; ' ELSE '' END, '') || CASE WHEN"       \
	" coalesce(" SHARD_RANK_ONLY ", 0) > 0 THEN (SELECT count(*) FROM shards s WHERE"     \
	" s.list_id = v.shard_list AND s.idx < v.nshards AND " MTI_CAT_SHARD_BAD("s.") ") ||" \
	" ' of its shards, as a check of a version sharing them found (see its shards)'"     \
	" ELSE ' (see its fragments)' END ELSE"                                              \
	" (SELECT CASE " CHECK_STATE("k.") " WHEN"                                         \
	" 'rebuilt' THEN CASE WHEN k.state = 'rebuilt' THEN 'rebuilt' ELSE 'rebuilt: its"  \
	" damaged shards were rebuilt since (' || k.state || ' at ' || k.at || ')' END"    \
	" ELSE k.state || CASE WHEN k.sources <> '' THEN ' from ' || k.sources ELSE '' END" \
	" || CASE WHEN k.message <> '' THEN ': ' || k.message ELSE '' END END FROM checks k" \
	" WHERE k.version_id = v.id ORDER BY k.id DESC LIMIT 1) END AS health,"            \
	" (SELECT kind || ' at ' || at || ': ' || objects || ' objects, ' || damaged ||"   \
	" ' damaged, ' || rebuilt || ' rebuilt, ' || bytes_read || ' bytes read' FROM"     \
	" checks WHERE version_id = v.id ORDER BY id DESC LIMIT 1) AS lastcheck,"          \
	" (SELECT at || ': ' || rebuilt || ' rebuilt' || CASE WHEN sources <> '' THEN"     \
	" ' from ' || sources ELSE '' END || ', ' || unrepairable || ' unrepairable' FROM" \
	" checks WHERE version_id = v.id AND kind = 'repair' ORDER BY id DESC LIMIT 1)"    \
	" AS lastrepair"

/* The worst state of the versions `where` picks (alias v): a version whose
 * manifest is lost, or with damage nothing can rebuild, is 'unrepairable';
 * then 'damaged', 'repairable', 'unverified' (never checked) and 'sound' (a
 * rebuilt version is sound again); NULL when there is no version.  One
 * aggregate over each version's last check and its shards' recorded health
 * (SHARD_RANK), as the versions list reads them. */
#define WORST_HEALTH(where)                                                                  \
	"(SELECT CASE max(r) WHEN 4 THEN 'unrepairable' WHEN 3 THEN 'damaged' WHEN 2 THEN"   \
	" 'repairable' WHEN 1 THEN 'unverified' WHEN 0 THEN 'sound' END FROM (SELECT CASE"   \
	" WHEN v.manifest_size < 0 THEN 4 ELSE max(coalesce(" SHARD_RANK ", 0), coalesce(("  \
	"SELECT " STATE_RANK(CHECK_STATE("k.")) " FROM checks k WHERE k.version_id = v.id"   \
	" ORDER BY k.id DESC LIMIT 1), 1)) END AS r FROM versions v WHERE " where "))"

/* A model object's recorded health as a rank, as STATE_RANK (a rebuilt
 * object is sound again). */
#define OBJ_RANK(x) STATE_RANK(x)
/* Checkpoint k's worst: of its tensor objects (1 for one never checked;
 * kept per object, so shared with every checkpoint naming it: one probe of
 * the primary key each), and of the objects that are its own (parity,
 * record, manifest: "checkpoint <> ''" lets SQLite use the partial index
 * model_objects_ckpt instead of reading every object of the model). */
#define CKPT_RANK(k)                                                                        \
	"max(coalesce((SELECT max(CASE WHEN o.health IS NULL THEN 1 ELSE " OBJ_RANK("o.health") \
	" END) FROM ckpt_tensors t LEFT JOIN model_objects o ON o.model_id = " k ".model_id"     \
	" AND o.object = 'tensors/' || t.sha256 WHERE t.checkpoint_id = " k ".id), 0),"        \
	" coalesce((SELECT max(" OBJ_RANK("o.health") ") FROM model_objects o WHERE"            \
	" o.model_id = " k ".model_id AND o.checkpoint = " k ".name AND o.checkpoint <> ''), 0))"
/* Whether any object of checkpoint k has a recorded health. */
#define CKPT_CHECKED(k)                                                                     \
	"(EXISTS (SELECT 1 FROM ckpt_tensors t JOIN model_objects o ON o.model_id = " k        \
	".model_id AND o.object = 'tensors/' || t.sha256 WHERE t.checkpoint_id = " k ".id) OR" \
	" EXISTS (SELECT 1 FROM model_objects o WHERE o.model_id = " k ".model_id AND"          \
	" o.checkpoint = " k ".name AND o.checkpoint <> ''))"
/* A checkpoint's state: NULL when nothing of it was ever checked. */
#define CKPT_HEALTH                                                                         \
	"CASE " CKPT_RANK("k") " WHEN 4 THEN 'unrepairable' WHEN 3 THEN 'damaged' WHEN 2 THEN" \
	" 'repairable' WHEN 1 THEN CASE WHEN " CKPT_CHECKED("k") " THEN 'unverified' END"      \
	" ELSE 'sound' END"
/* A model's: the worst of its checkpoints', as a dataset's. */
#define MODEL_HEALTH                                                                        \
	"(SELECT CASE max(r) WHEN 4 THEN 'unrepairable' WHEN 3 THEN 'damaged' WHEN 2 THEN"   \
	" 'repairable' WHEN 1 THEN 'unverified' WHEN 0 THEN 'sound' END FROM (SELECT "       \
	CKPT_RANK("k") " AS r FROM checkpoints k WHERE k.model_id = m.id))"

/* Field rows of one version: (name, value) pairs in display order. */
#define FIELD(name, expr) "SELECT 0, " name ", " expr " FROM v UNION ALL "

/* How many of version v's shard references match one of its parent's
 * (NULL without a parent; when the parent is no longer in the catalog, what
 * was counted while it was: cat_keep_shared).  CAT_NSHARED_LIVE counts. */
#define NSHARED "CASE v.parent WHEN '' THEN NULL ELSE coalesce(" CAT_NSHARED_LIVE ", v.parent_shared) END"
/* 1 when v's parent is no longer in the catalog (removed), 0 when it is,
 * NULL without a parent. */
#define PARENT_GONE                                                                         \
	"CASE v.parent WHEN '' THEN NULL ELSE NOT EXISTS (SELECT 1 FROM versions pv WHERE"  \
	" pv.dataset_id = v.dataset_id AND pv.name = v.parent) END"

/* A shard row's id names its version and index: rows are shared by the
 * versions of a chain, and the browser opens a shard of one version. */
#define SHARD_ID "((v.id << 32) | s.idx)"

static const struct level levels[MT_CAT_NLEVELS] = {
	[MT_CAT_REMOTES] = {6,
		"SELECT r.id, r.name, r.url, r.online,"
		" (SELECT count(*) FROM datasets d JOIN buckets b ON b.id = d.bucket_id"
		"  WHERE b.remote_id = r.id), r.synced, r.error FROM remotes r WHERE 1"
		LIKE_FILTER("r.name LIKE ?2 ESCAPE '\\' OR r.url LIKE ?2 ESCAPE '\\'")
		" ORDER BY r.name = 'local' DESC, r.name"},
	[MT_CAT_BUCKETS] = {5,
		"SELECT b.id, b.url, count(d.id), coalesce(sum(d.nversions), 0),"
		" coalesce(sum(d.stored_bytes), 0), " WORST_HEALTH("v.dataset_id IN (SELECT"
		" hd.id FROM datasets hd WHERE hd.bucket_id = b.id)")
		" FROM buckets b LEFT JOIN datasets d"
		" ON d.bucket_id = b.id WHERE b.remote_id = ?1"
		LIKE_FILTER("b.url LIKE ?2 ESCAPE '\\'") " GROUP BY b.id ORDER BY b.url"},
	[MT_CAT_DATASETS] = {8,
		"SELECT d.id, name, nversions, latest, rows, stored_bytes, tags, description, "
		WORST_HEALTH("v.dataset_id = d.id") " FROM datasets d WHERE bucket_id = ?1"
		LIKE_FILTER("name LIKE ?2 ESCAPE '\\' OR description LIKE ?2 ESCAPE '\\'"
			    " OR tags LIKE ?2 ESCAPE '\\'") " ORDER BY name"},
	[MT_CAT_VERSIONS] = {13,
		"SELECT v.id, v.name, v.created, v.rows, v.nshards, v.stored_bytes, v.parent,"
		" coalesce((SELECT group_concat(tag, ' ') FROM tags WHERE version_id = v.id), ''),"
		" v.description, " PROTECTION("v.") ", v.protect_overhead,"
		/* A manifest lost: the version read from its protection record, or
		 * held by another store (manifest_size -2). */
		" CASE WHEN v.manifest_size < 0 THEN 'lost' ELSE " VERSION_STATE " END,"
		" " NSHARED ", " PARENT_GONE
		" FROM versions v WHERE v.dataset_id = ?1"
		LIKE_FILTER("v.name LIKE ?2 ESCAPE '\\' OR v.description LIKE ?2 ESCAPE '\\' OR"
			    " EXISTS (SELECT 1 FROM tags t WHERE t.version_id = v.id AND"
			    " t.tag LIKE ?2 ESCAPE '\\')") " ORDER BY v.created, v.id"},
	[MT_CAT_SHARDS] = {8,
		"SELECT " SHARD_ID ", s.idx, s.sha256, s.first_row, s.rows, s.bytes,"
		" nullif(s.verified, ''), nullif(s.health, ''), nullif(s.health_note, '')"
		" FROM versions v JOIN shards s ON s.list_id = v.shard_list AND s.idx < v.nshards"
		" WHERE v.id = ?1" LIKE_FILTER("s.sha256 LIKE ?2 ESCAPE '\\'") " ORDER BY s.idx"},
	[MT_CAT_FRAGMENTS] = {9,
		"SELECT (f.version_id << 32) | f.idx, f.idx, f.first_row, f.rows, f.first_shard,"
		" f.nshards, f.bytes, f.sha256, nullif(f.health, ''), nullif(f.health_note, '')"
		" FROM fragments f WHERE f.version_id = ?1"
		LIKE_FILTER("f.sha256 LIKE ?2 ESCAPE '\\' OR f.health LIKE ?2 ESCAPE '\\'")
		" ORDER BY f.idx"},
	[MT_CAT_ATTRS] = {4,
		"SELECT idx, name, dtype, shape, ragged"
		" FROM attrs WHERE version_id = ?1" LIKE_FILTER("name LIKE ?2 ESCAPE '\\'")
		" ORDER BY idx"},
	[MT_CAT_VERSION] = {2,
		"WITH v AS (SELECT v.*, d.name AS dataset, b.url AS url, r.name AS remote,"
		" (SELECT group_concat(tag, ', ') FROM tags WHERE version_id = v.id) AS tagl,"
		" (SELECT ltrim(args || '  script ' || substr(sha256, 1, 12)) FROM recipes"
		" WHERE version_id = v.id) AS recipe,"
		" (SELECT group_concat(p.name, ' < ') FROM (WITH RECURSIVE up(name, n) AS"
		"  (SELECT v.parent, 0 UNION ALL SELECT pv.parent, up.n + 1 FROM up JOIN versions pv"
		"   ON pv.dataset_id = v.dataset_id AND pv.name = up.name WHERE up.name <> ''"
		"   AND up.n < 64) SELECT name FROM up WHERE name <> '' ORDER BY n) p) AS lineage,"
		" (SELECT count(*) FROM shards WHERE list_id = v.shard_list AND idx < v.nshards"
		"  AND verified = 'ok') AS nok,"
		" coalesce(" NSHARED ", 0) AS nshared, " PARENT_GONE " AS pgone,"
		" " NSHARED " AS pshared,"
		" (SELECT count(*) FROM shards WHERE list_id = v.shard_list AND idx < v.nshards"
		"  AND verified NOT IN ('', 'ok')) AS nbad, " CHECK_FIELDS
		" FROM versions v JOIN datasets d ON d.id = v.dataset_id JOIN buckets b"
		" ON b.id = d.bucket_id JOIN remotes r ON r.id = b.remote_id WHERE v.id = ?1)"
		FIELD("'dataset'", "dataset") FIELD("'version'", "name")
		FIELD("'remote'", "remote || '  ' || url")
		FIELD("'parent'", "nullif(parent, '')")
		FIELD("'lineage'", "coalesce(name || ' < ' || lineage, name)")
		FIELD("'shared'", "CASE WHEN parent = '' THEN NULL WHEN pgone AND pshared IS NULL"
		      " THEN parent || ' was removed' ELSE nshared || ' of ' || nshards ||"
		      " ' shards with ' || parent || CASE WHEN pgone THEN ' (removed; it still"
		      " holds them)' WHEN nshared = nshards THEN ' (all)' ELSE '' END END")
		FIELD("'created'", "created")
		FIELD("'author'", "nullif(author, '')")
		FIELD("'description'", "nullif(description, '')")
		FIELD("'tags'", "tagl") FIELD("'rows'", "rows")
		FIELD("'shards'", "nshards") FIELD("'stored bytes'", "stored_bytes")
		FIELD("'raw bytes'", "raw_bytes")
		FIELD("'ratio'", "1.0 * raw_bytes / nullif(stored_bytes, 0)")
		FIELD("'zstd level'", "level")
		FIELD("'recipe'", "recipe")
		/* A row per source, its id the source's version where the catalog
		 * knows it (0: not indexed), so the browser can go there. */
		"SELECT * FROM (SELECT coalesce((SELECT sv.id FROM versions sv JOIN datasets sd"
		" ON sd.id = sv.dataset_id JOIN buckets sb ON sb.id = sd.bucket_id WHERE"
		" sd.name = s.dataset AND sv.name = s.version AND sb.url = CASE s.store WHEN ''"
		" THEN v.url ELSE s.store END), 0), 'source', s.dataset || '@' || s.version ||"
		" CASE s.store WHEN '' THEN '' ELSE '  ' || s.store END FROM sources s, v"
		" WHERE s.version_id = v.id ORDER BY s.idx) UNION ALL "
		/* A row per attached file, in name order: its name and size. */
		"SELECT * FROM (SELECT 0, 'attachment', a.name || '  ' || a.bytes || ' bytes'"
		" FROM attachments a, v WHERE a.version_id = v.id ORDER BY a.idx) UNION ALL "
		FIELD("'verified'", "CASE WHEN nok + nbad = 0 THEN NULL ELSE"
		      " nok || ' of ' || nshards || ' shards sound, ' || nbad || ' damaged' END")

		/* Format 2 only: how many fragments, how they stand, the bad ones. */
		"SELECT 0, 'fragments', (SELECT count(*) || ': ' || sum(f.health IN ('sound',"
		" 'rebuilt')) || ' sound, ' || sum(f.health = '') || ' not checked' ||"
		" coalesce(', ' || " FRAG_BAD_LIST ", '') FROM fragments f WHERE"
		" f.version_id = v.id) FROM v WHERE EXISTS (SELECT 1 FROM fragments f WHERE"
		" f.version_id = v.id) UNION ALL "
		"SELECT 0, 'attributes', (SELECT count(*) FROM attrs WHERE version_id = ?1) FROM v"
		" UNION ALL " FIELD("'protection'", PROTECTION("") " || printf(', overhead %.1f%%',"
				    " 100 * protect_overhead)")
		FIELD("'health'", "health") FIELD("'checked'", "lastcheck")
		"SELECT 0, 'repaired', lastrepair FROM v"},
	[MT_CAT_SHARD] = {2,
		"WITH s AS (SELECT s.*, d.name AS dataset, v.name AS version FROM versions v"
		" JOIN shards s ON s.list_id = v.shard_list AND s.idx = (?1 & 4294967295) AND"
		" s.idx < v.nshards JOIN datasets d ON d.id = v.dataset_id WHERE v.id = ?1 >> 32)"
		"SELECT 0, 'shard', idx FROM s UNION ALL SELECT 0, 'version', dataset || '@' ||"
		" version FROM s UNION ALL SELECT 0, 'sha256', sha256 FROM s UNION ALL SELECT 0,"
		" 'key', 'datasets/' || dataset || '/shards/' || sha256 || '.h5' FROM s UNION ALL"
		" SELECT 0, 'rows', rows FROM s UNION ALL SELECT 0, 'first row', first_row FROM s"
		" UNION ALL SELECT 0, 'bytes', bytes FROM s UNION ALL SELECT 0, 'verified',"
		" CASE verified WHEN '' THEN NULL ELSE verified || ' at ' || verified_at END"
		" FROM s UNION ALL SELECT 0, 'health', CASE health WHEN '' THEN NULL ELSE health ||"
		" CASE health_note WHEN '' THEN '' ELSE ': ' || health_note END || ' at ' ||"
		" health_at END FROM s"},
	[MT_CAT_JOBS] = {6,
		"SELECT id, id, kind, target, started, finished, CASE WHEN code IS NULL THEN"
		" 'running' WHEN code = 0 THEN 'ok' ELSE message END FROM jobs WHERE 1"
		LIKE_FILTER("kind LIKE ?2 ESCAPE '\\' OR target LIKE ?2 ESCAPE '\\'")
		" ORDER BY id DESC"},
	[MT_CAT_JOB] = {2,
		"SELECT rowid, item, CASE code WHEN 0 THEN 'ok' ELSE message END FROM job_results"
		" WHERE job_id = ?1" LIKE_FILTER("item LIKE ?2 ESCAPE '\\'") " ORDER BY rowid"},
	[MT_CAT_SEARCH] = {5,
		"SELECT s.rowid, r.name, s.dataset, s.version, s.tags,"
		" snippet(search, -1, '[', ']', '...', 8) FROM search s"
		" JOIN versions v ON v.id = s.rowid JOIN datasets d ON d.id = v.dataset_id"
		" JOIN buckets b ON b.id = d.bucket_id JOIN remotes r ON r.id = b.remote_id"
		" WHERE search MATCH ?2 ORDER BY rank, r.name, s.dataset, v.created"},
	[MT_CAT_MODELS] = {8,
		"SELECT m.id, m.name, m.ncheckpoints, m.latest, m.step, m.stored_bytes, m.tags,"
		" m.description, " MODEL_HEALTH " FROM models m WHERE m.bucket_id = ?1"
		LIKE_FILTER("name LIKE ?2 ESCAPE '\\' OR description LIKE ?2 ESCAPE '\\'"
			    " OR tags LIKE ?2 ESCAPE '\\'") " ORDER BY name"},
	[MT_CAT_CHECKPOINTS] = {13,
		"SELECT k.id, k.name, k.created, k.step, k.ntensors, k.bytes, k.stored_bytes,"
		" k.new_bytes, k.parent, k.metrics, k.tags, k.description, k.author, " CKPT_HEALTH
		" FROM checkpoints k WHERE k.model_id = ?1"
		LIKE_FILTER("name LIKE ?2 ESCAPE '\\' OR description LIKE ?2 ESCAPE '\\'"
			    " OR tags LIKE ?2 ESCAPE '\\'") " ORDER BY num"},
	[MT_CAT_TENSORS] = {7,
		"SELECT t.idx, t.key, t.dtype, t.shape, t.bytes, t.stored, t.sha256,"
		" CASE WHEN k.parent = '' THEN 0 WHEN p.id IS NULL THEN NULL ELSE EXISTS (SELECT 1 FROM"
		"  ckpt_tensors pt WHERE pt.checkpoint_id = p.id AND pt.sha256 = t.sha256) END"
		" FROM ckpt_tensors t JOIN checkpoints k ON k.id = t.checkpoint_id LEFT JOIN"
		" checkpoints p ON p.model_id = k.model_id AND p.name = k.parent"
		" WHERE t.checkpoint_id = ?1" LIKE_FILTER("t.key LIKE ?2 ESCAPE '\\'")
		" ORDER BY t.idx"},
	[MT_CAT_SEARCH_MODELS] = {5,
		"SELECT s.rowid, r.name, s.model, s.version, s.tags,"
		" snippet(ckpt_search, -1, '[', ']', '...', 8) FROM ckpt_search s"
		" JOIN checkpoints k ON k.id = s.rowid JOIN models m ON m.id = k.model_id"
		" JOIN buckets b ON b.id = m.bucket_id JOIN remotes r ON r.id = b.remote_id"
		" WHERE ckpt_search MATCH ?2 ORDER BY rank, r.name, s.model, k.num"},
};

/* "%text%" with LIKE's wildcards escaped. */
static char *cat_like(const char *text)
{
	size_t n = strlen(text);
	char *p = malloc(2 * n + 3), *q = p;
	if (!p)
		return NULL;
	*q++ = '%';
	for (const char *s = text; *s; s++) {
		if (*s == '%' || *s == '_' || *s == '\\')
			*q++ = '\\';
		*q++ = *s;
	}
	*q++ = '%';
	*q = '\0';
	return p;
}

/* Words of free text as an FTS5 query: each a quoted prefix, all required,
 * so no user input is read as query syntax. */
static char *cat_fts_query(const char *text)
{
	size_t n = strlen(text);
	char *p = malloc(4 * n + 8), *q = p;
	if (!p)
		return NULL;
	const char *s = text;
	while (*s) {
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s)
			break;
		if (q != p)
			*q++ = ' ';
		*q++ = '"';
		for (; *s && *s != ' ' && *s != '\t'; s++) {
			if (*s == '"')
				*q++ = '"';
			*q++ = *s;
		}
		*q++ = '"';
		*q++ = '*';
	}
	*q = '\0';
	return p;
}

int mt_catalog_list(mt_catalog *c, int level, int64_t parent, const char *filter,
		    mt_catalog_fn fn, void *ud, mt_error *err)
{
	if (level < 0 || level >= MT_CAT_NLEVELS)
		return mt_error_set(err, MT_EINVAL, "catalog: no list %d", level);
	const struct level *lv = &levels[level];
	char *pattern = NULL;
	if (level == MT_CAT_SEARCH || level == MT_CAT_SEARCH_MODELS) {
		if (!filter || !*filter)
			return mt_error_set(err, MT_EINVAL, "search: empty query");
		pattern = cat_fts_query(filter);
	} else if (filter && *filter) {
		pattern = cat_like(filter);
	}
	if (filter && *filter && !pattern)
		return mt_error_set(err, MT_ENOMEM, "out of memory");
	if ((level == MT_CAT_SEARCH || level == MT_CAT_SEARCH_MODELS) && !*pattern) {
		free(pattern);
		return mt_error_set(err, MT_EINVAL, "search: empty query");
	}
	pthread_mutex_lock(&c->lock);
	sqlite3_stmt *st;
	int rc = mti_cat_prepare(c, lv->sql, &st, err);
	if (!rc) {
		sqlite3_bind_int64(st, 1, parent);
		if (pattern)
			sqlite3_bind_text(st, 2, pattern, -1, SQLITE_STATIC);
		else
			sqlite3_bind_null(st, 2);
		const char *cols[16];
		mt_catalog_row row = {0, lv->ncols, cols};
		int r;
		while ((r = sqlite3_step(st)) == SQLITE_ROW) {
			row.id = sqlite3_column_int64(st, 0);
			for (size_t i = 0; i < lv->ncols; i++) {
				const unsigned char *t = sqlite3_column_text(st, (int)i + 1);
				cols[i] = (const char *)t;
			}
			if ((rc = fn(ud, &row)))
				break;
		}
		if (!rc && r != SQLITE_DONE)
			rc = mti_cat_sqlerr(c, err, "listing");
		sqlite3_finalize(st);
	}
	pthread_mutex_unlock(&c->lock);
	free(pattern);
	return rc;
}

/* ---- locating rows ----------------------------------------------------------------- */

static char *cat_col_dup(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);
	return t ? strdup((const char *)t) : NULL;
}

int mt_catalog_locate(mt_catalog *c, int level, int64_t id, mt_catalog_ref *out, mt_error *err)
{
	static const char *const sql[MT_CAT_NLEVELS] = {
		[MT_CAT_REMOTES] = "SELECT name, url, NULL, NULL, NULL, -1 FROM remotes WHERE id = ?1",
		[MT_CAT_BUCKETS] = "SELECT r.name, b.url, NULL, NULL, NULL, -1 FROM buckets b JOIN "
				   "remotes r ON r.id = b.remote_id WHERE b.id = ?1",
		[MT_CAT_DATASETS] = "SELECT r.name, b.url, d.name, NULL, NULL, -1 FROM datasets d "
				    "JOIN buckets b ON b.id = d.bucket_id JOIN remotes r ON r.id = "
				    "b.remote_id WHERE d.id = ?1",
		[MT_CAT_VERSIONS] = "SELECT r.name, b.url, d.name, v.name, NULL, -1 FROM versions v "
				    "JOIN datasets d ON d.id = v.dataset_id JOIN buckets b ON b.id = "
				    "d.bucket_id JOIN remotes r ON r.id = b.remote_id WHERE v.id = ?1",
		[MT_CAT_SHARDS] = "SELECT r.name, b.url, d.name, v.name, s.sha256, s.idx FROM versions "
				  "v JOIN shards s ON s.list_id = v.shard_list AND s.idx = (?1 & "
				  "4294967295) AND s.idx < v.nshards JOIN datasets d ON d.id = "
				  "v.dataset_id JOIN buckets b ON b.id = d.bucket_id JOIN remotes r "
				  "ON r.id = b.remote_id WHERE v.id = ?1 >> 32",
		[MT_CAT_MODELS] = "SELECT r.name, b.url, NULL, NULL, NULL, -1, m.name FROM models m "
				  "JOIN buckets b ON b.id = m.bucket_id JOIN remotes r ON r.id = "
				  "b.remote_id WHERE m.id = ?1",
		[MT_CAT_CHECKPOINTS] = "SELECT r.name, b.url, NULL, k.name, NULL, -1, m.name FROM "
				       "checkpoints k JOIN models m ON m.id = k.model_id JOIN buckets "
				       "b ON b.id = m.bucket_id JOIN remotes r ON r.id = b.remote_id "
				       "WHERE k.id = ?1",
	};
	memset(out, 0, sizeof *out);
	out->shard = -1;
	int lv = level == MT_CAT_VERSION || level == MT_CAT_SEARCH ? MT_CAT_VERSIONS
		 : level == MT_CAT_SHARD				 ? MT_CAT_SHARDS
		 : level == MT_CAT_SEARCH_MODELS			 ? MT_CAT_CHECKPOINTS
									 : level;
	int model = lv == MT_CAT_MODELS || lv == MT_CAT_CHECKPOINTS;
	if (lv < 0 || lv >= MT_CAT_NLEVELS || !sql[lv])
		return mt_error_set(err, MT_EINVAL, "catalog: rows of list %d have no place", level);
	pthread_mutex_lock(&c->lock);
	sqlite3_stmt *st;
	int rc = mti_cat_prepare(c, sql[lv], &st, err);
	if (!rc) {
		sqlite3_bind_int64(st, 1, id);
		int r = sqlite3_step(st);
		if (r == SQLITE_ROW) {
			out->remote = cat_col_dup(st, 0);
			out->url = cat_col_dup(st, 1);
			out->dataset = cat_col_dup(st, 2);
			out->version = cat_col_dup(st, 3);
			out->sha256 = cat_col_dup(st, 4);
			out->shard = sqlite3_column_int64(st, 5);
			out->model = model ? cat_col_dup(st, 6) : NULL;
			if (!out->remote || !out->url || (model && !out->model) ||
			    (!model && lv >= MT_CAT_DATASETS && !out->dataset) ||
			    ((lv == MT_CAT_VERSIONS || lv == MT_CAT_SHARDS ||
			      lv == MT_CAT_CHECKPOINTS) && !out->version) ||
			    (lv == MT_CAT_SHARDS && !out->sha256))
				rc = mt_error_set(err, MT_ENOMEM, "out of memory");
		} else if (r == SQLITE_DONE) {
			rc = mt_error_set(err, MT_ENOTFOUND, "catalog: no such row any more (sync?)");
		} else {
			rc = mti_cat_sqlerr(c, err, "locating a row");
		}
		sqlite3_finalize(st);
	}
	pthread_mutex_unlock(&c->lock);
	if (rc)
		mt_catalog_ref_free(out);
	return rc;
}

void mt_catalog_ref_free(mt_catalog_ref *r)
{
	if (!r)
		return;
	free(r->remote);
	free(r->url);
	free(r->dataset);
	free(r->version);
	free(r->sha256);
	free(r->model);
	memset(r, 0, sizeof *r);
	r->shard = -1;
}
