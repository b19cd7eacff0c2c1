/* test-remote.c — remotes in the configuration file: add, list, find, replace, remove, bad files, file mode. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store.h"
#include "tap.h"

static char dir[] = "/tmp/mt-remote.XXXXXX";
static char path[256];

static void write_config(const char *text)
{
	FILE *f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
}

static char *read_config(void)
{
	static char buf[8192];
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = '\0';
	return buf;
}

static char s_origin[] = "origin", s_team[] = "team", s_url_file[] = "file:///data/store",
	    s_url_s3[] = "s3://bucket/prefix", s_ep[] = "http://127.0.0.1:9000", s_prof[] = "ml",
	    s_region[] = "eu-west-1", s_bad_name[] = "bad/name", s_bad_url[] = "http://x",
	    s_no_bucket[] = "s3:///x", s_bad_ep[] = "127.0.0.1:9000";

int main(void)
{
	if (!mkdtemp(dir))
		return tap_ok(0, "mkdtemp"), tap_done();
	snprintf(path, sizeof path, "%s/sub/config.json", dir);
	setenv("MATORAGE_CONFIG", path, 1);
	mt_error err = { 0 };
	mt_remote *list;
	size_t n;

	if (TAP_CALL(mt_remotes_list(&list, &n, &err), &err, "no file: list works"))
		tap_ok(n == 0 && list == NULL, "no file: no remotes");
	mt_remote r;
	tap_ok(mt_remote_find("origin", &r, &err) == MT_ENOTFOUND, "no file: find says not found");

	mt_remote team = { .name = s_team, .url = s_url_s3, .endpoint = s_ep, .profile = s_prof,
			   .region = s_region, .insecure = 1, .addressing = MT_S3_PATH };
	mt_remote origin = { .name = s_origin, .url = s_url_file };
	TAP_CALL(mt_remote_add(&team, 0, &err), &err, "add an s3 remote (creates the directory)");
	TAP_CALL(mt_remote_add(&origin, 0, &err), &err, "add a file remote");
	struct stat sb;
	tap_ok(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0600, "the file is private (0600)");
	if (TAP_CALL(mt_remotes_list(&list, &n, &err), &err, "list")) {
		tap_ok(n == 2 && !strcmp(list[0].name, "origin") && !strcmp(list[1].name, "team"),
		       "sorted by name");
		tap_ok(n == 2 && !strcmp(list[1].endpoint, s_ep) && !strcmp(list[1].profile, "ml") &&
			       !strcmp(list[1].region, s_region) && list[1].insecure &&
			       list[1].addressing == MT_S3_PATH && !list[1].ca_bundle,
		       "every field comes back");
		mt_remotes_free(list, n);
	}
	if (TAP_CALL(mt_remote_find("origin", &r, &err), &err, "find")) {
		tap_ok(!strcmp(r.url, s_url_file) && !r.endpoint && !r.insecure, "find: a copy");
		mt_remotes_free_one(&r);
	}

	int rc = mt_remote_add(&origin, 0, &err);
	tap_ok(rc == MT_EEXIST && strstr(err.message, "origin") && strstr(err.message, path),
	       "a taken name is EEXIST: %s", err.message);
	origin.url = s_url_s3;
	TAP_CALL(mt_remote_add(&origin, 1, &err), &err, "replace");
	if (!mt_remote_find("origin", &r, &err)) {
		tap_ok(!strcmp(r.url, s_url_s3), "replaced");
		mt_remotes_free_one(&r);
	}

	/* Settings a later version may add survive a rewrite. */
	write_config("{\"future\": {\"x\": 1}, \"remotes\": {\"origin\": {\"url\": "
		     "\"s3://bucket/prefix\", \"tier\": \"gold\"}, \"team\": {\"url\": "
		     "\"file:///t\"}}}");
	TAP_CALL(mt_remote_remove("team", &err), &err, "remove");
	origin.endpoint = s_ep;
	TAP_CALL(mt_remote_add(&origin, 1, &err), &err, "replace again");
	tap_ok(strstr(read_config(), "\"future\"") && strstr(read_config(), "\"tier\"") &&
		       strstr(read_config(), s_ep) && !strstr(read_config(), "file:///t"),
	       "unknown keys and fields are kept across rewrites");
	rc = mt_remote_remove("team", &err);
	tap_ok(rc == MT_ENOTFOUND && strstr(err.message, "team"), "remove twice: ENOTFOUND: %s",
	       err.message);

	mt_remote bad = { .name = s_bad_name, .url = s_url_s3 };
	rc = mt_remote_add(&bad, 0, &err);
	tap_ok(rc == MT_EINVAL && strstr(err.message, "bad/name"), "bad name: %s", err.message);
	bad.name = s_team;
	bad.url = s_bad_url;
	rc = mt_remote_add(&bad, 0, &err);
	tap_ok(rc == MT_EINVAL && strstr(err.message, "http://x"), "bad URL: %s", err.message);
	bad.url = s_no_bucket;
	rc = mt_remote_add(&bad, 0, &err);
	tap_ok(rc == MT_EINVAL, "s3 URL without a bucket: %s", err.message);
	bad.url = s_url_s3;
	bad.endpoint = s_bad_ep;
	rc = mt_remote_add(&bad, 0, &err);
	tap_ok(rc == MT_EINVAL && strstr(err.message, "endpoint"), "endpoint without scheme: %s",
	       err.message);

	write_config("{\"remotes\": {\"a\": {\"url\": 5}}}");
	rc = mt_remotes_list(&list, &n, &err);
	tap_ok(rc == MT_EFORMAT && strstr(err.message, "url is not a string") &&
		       strstr(err.message, path),
	       "wrong type: EFORMAT naming file, remote and field: %s", err.message);
	write_config("{\"remotes\": {\"a\": {\"url\": \"s3://b/c\", \"addressing\": \"sideways\"}}}");
	rc = mt_remote_find("a", &r, &err);
	tap_ok(rc == MT_EFORMAT && strstr(err.message, "addressing"), "bad addressing: %s",
	       err.message);
	write_config("{\"remotes\": {\n  \"a\": }\n");
	rc = mt_remotes_list(&list, &n, &err);
	tap_ok(rc == MT_EFORMAT && strstr(err.message, path) && strstr(err.message, "line 2"),
	       "broken JSON: EFORMAT naming file and line: %s", err.message);
	mt_remote ok = { .name = s_team, .url = s_url_s3 };
	rc = mt_remote_add(&ok, 0, &err);
	tap_ok(rc == MT_EFORMAT, "a broken file is not overwritten by add");
	tap_ok(strstr(read_config(), "\"a\": }") != NULL, "and is left as it was");

	write_config("[1, 2]");
	rc = mt_remotes_list(&list, &n, &err);
	tap_ok(rc == MT_EFORMAT, "not an object: %s", err.message);

	unlink(path);
	snprintf(path, sizeof path, "%s/sub", dir);
	rmdir(path);
	rmdir(dir);
	return tap_done();
}
