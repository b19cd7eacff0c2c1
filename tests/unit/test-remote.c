/* test-remote.c — remotes in the configuration file: add, list, find, replace, remove, bad files, file mode. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

/* Entries of directory d other than . and .. */
static int dir_entries(const char *d)
{
	DIR *dp = opendir(d);
	int k = 0;
	for (struct dirent *de; dp && (de = readdir(dp));)
		k += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	if (dp)
		closedir(dp);
	return k;
}

static char s_origin[] = "origin", s_team[] = "team", s_url_file[] = "file:///data/store",
	    s_url_s3[] = "s3://bucket/prefix", s_ep[] = "http://127.0.0.1:9000", s_prof[] = "ml",
	    s_region[] = "eu-west-1", s_bad_name[] = "bad/name", s_bad_url[] = "http://x",
	    s_no_bucket[] = "s3:///x", s_bad_ep[] = "127.0.0.1:9000", s_empty[] = "",
	    s_dot_name[] = ".hidden", s_rel_file[] = "file://data/store", s_s3_only[] = "s3://";

int main(void)
{
	if (!mkdtemp(dir))
		return tap_ok(0, "mkdtemp"), tap_done();
	snprintf(path, sizeof path, "%s/sub/config.json", dir);
	setenv("MATORAGE_CONFIG", path, 1);
	mt_error err = { 0 };
	mt_remote *list;
	size_t n;
	char sub[300];

	if (TAP_CALL(mt_remotes_list(&list, &n, &err), &err, "no file: list works"))
		tap_ok(n == 0 && list == NULL, "no file: no remotes");
	mt_remote r;
	tap_ok(mti_remote_find("origin", &r, &err) == MT_ENOTFOUND, "no file: find says not found");

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
	if (TAP_CALL(mti_remote_find("origin", &r, &err), &err, "find")) {
		tap_ok(!strcmp(r.url, s_url_file) && !r.endpoint && !r.insecure, "find: a copy");
		mti_remotes_free_one(&r);
	}

	mt_error quiet = { 0 };
	strcpy(quiet.message, "untouched");
	tap_ok(mti_remote_find("nope", &r, &quiet) == MT_ENOTFOUND &&
		       !strcmp(quiet.message, "untouched") && r.name == NULL,
	       "find of an absent remote is a quiet ENOTFOUND");
	snprintf(sub, sizeof sub, "%s/sub", dir);
	tap_ok(stat(sub, &sb) == 0 && (sb.st_mode & 0777) == 0700,
	       "the directory it created is private (0700)");
	tap_ok(dir_entries(sub) == 1, "no temporary file is left beside it");

	int rc = mt_remote_add(&origin, 0, &err);
	tap_ok(rc == MT_EEXIST && strstr(err.message, "origin") && strstr(err.message, path),
	       "a taken name is EEXIST: %s", err.message);
	origin.url = s_url_s3;
	TAP_CALL(mt_remote_add(&origin, 1, &err), &err, "replace");
	if (!mti_remote_find("origin", &r, &err)) {
		tap_ok(!strcmp(r.url, s_url_s3), "replaced");
		mti_remotes_free_one(&r);
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

	/* Every field of add is checked before the file is touched. */
	mt_remote inv = { .name = s_empty, .url = s_url_s3 };
	tap_ok(mt_remote_add(&inv, 0, &err) == MT_EINVAL, "empty name: %s", err.message);
	inv.name = s_dot_name;
	tap_ok(mt_remote_add(&inv, 0, &err) == MT_EINVAL && strstr(err.message, ".hidden"),
	       "name starting with '.': %s", err.message);
	inv.name = s_team;
	inv.url = NULL;
	tap_ok(mt_remote_add(&inv, 0, &err) == MT_EINVAL, "no URL: %s", err.message);
	inv.url = s_rel_file;
	tap_ok(mt_remote_add(&inv, 0, &err) == MT_EINVAL && strstr(err.message, s_rel_file),
	       "file:// with a relative path: %s", err.message);
	inv.url = s_s3_only;
	tap_ok(mt_remote_add(&inv, 0, &err) == MT_EINVAL, "s3:// alone: %s", err.message);
	inv.url = s_url_s3;
	inv.addressing = 7;
	tap_ok(mt_remote_add(&inv, 0, &err) == MT_EINVAL && strstr(err.message, "addressing"),
	       "addressing out of range: %s", err.message);

	write_config("{\"remotes\": {\"a\": {\"url\": 5}}}");
	rc = mt_remotes_list(&list, &n, &err);
	tap_ok(rc == MT_EFORMAT && strstr(err.message, "url is not a string") &&
		       strstr(err.message, path),
	       "wrong type: EFORMAT naming file, remote and field: %s", err.message);
	write_config("{\"remotes\": {\"a\": {\"url\": \"s3://b/c\", \"addressing\": \"sideways\"}}}");
	rc = mti_remote_find("a", &r, &err);
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

	write_config("{\"remotes\": {\"a\": [1]}}");
	rc = mt_remotes_list(&list, &n, &err);
	tap_ok(rc == MT_EFORMAT && strstr(err.message, "remote a is not an object"),
	       "an entry that is not an object: %s", err.message);
	write_config("{\"remotes\": {\"a\": {\"url\": \"s3://b\", \"insecure\": \"yes\"}}}");
	rc = mti_remote_find("a", &r, &err);
	tap_ok(rc == MT_EFORMAT && strstr(err.message, "insecure"), "insecure not a boolean: %s",
	       err.message);
	write_config("{\"remotes\": {\"a\": {\"endpoint\": \"http://h\"}}}");
	rc = mti_remote_find("a", &r, &err);
	tap_ok(rc == MT_EFORMAT && strstr(err.message, "no url"), "an entry without url: %s",
	       err.message);
	write_config("{\"remotes\": 3}");
	rc = mti_remote_find("a", &r, &err);
	tap_ok(rc == MT_EFORMAT && strstr(err.message, path), "\"remotes\" not an object: %s",
	       err.message);

	/* A file with other settings but no remotes yet gains the key. */
	write_config("{\"editor\": \"vi\"}");
	TAP_CALL(mt_remote_add(&ok, 0, &err), &err, "add to a file without \"remotes\"");
	tap_ok(strstr(read_config(), "\"editor\"") && strstr(read_config(), "\"team\""),
	       "the other settings stay");
	rc = mt_remotes_list(&list, &n, &err);
	tap_ok(rc == 0 && n == 1, "and the remote is listed");
	if (rc == 0)
		mt_remotes_free(list, n);

	/* A configuration kept as a link (dotfiles) stays a link. */
	char real[300];
	snprintf(real, sizeof real, "%s/sub/real.json", dir);
	rename(path, real);
	tap_ok(symlink("real.json", path) == 0, "symlink the file");
	TAP_CALL(mt_remote_add(&team, 1, &err), &err, "replace through the link");
	struct stat lsb;
	tap_ok(lstat(path, &lsb) == 0 && S_ISLNK(lsb.st_mode) && strstr(read_config(), s_ep),
	       "the link is kept and its target rewritten");
	unlink(path);
	unlink(real);

	/* Writers in separate processes do not lose each other's remotes. */
	enum { NPROC = 8, EACH = 16 };
	pid_t kids[NPROC];
	for (int i = 0; i < NPROC; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			int failed = 0;
			for (int j = 0; j < EACH; j++) {
				char nm[32];
				snprintf(nm, sizeof nm, "w%d-%d", i, j);
				mt_remote w = { .name = nm, .url = s_url_s3 };
				mt_error e2 = { 0 };
				failed |= mt_remote_add(&w, 0, &e2) != 0;
			}
			_exit(failed);
		}
	}
	int kids_ok = 1;
	for (int i = 0; i < NPROC; i++) {
		int st = 1;
		kids_ok &= kids[i] > 0 && waitpid(kids[i], &st, 0) == kids[i] && WIFEXITED(st) &&
			   WEXITSTATUS(st) == 0;
	}
	tap_ok(kids_ok, "%d processes add %d remotes each at once", NPROC, EACH);
	rc = mt_remotes_list(&list, &n, &err);
	tap_ok(rc == 0 && n == NPROC * EACH, "all %d are there (%zu)", NPROC * EACH, n);
	if (rc == 0)
		mt_remotes_free(list, n);
	tap_ok(dir_entries(sub) == 1, "and no temporary file is left");
	unlink(path);

	/* A directory where the file should be is an I/O error, not "no remotes". */
	tap_ok(mkdir(path, 0700) == 0, "make a directory at the file's path");
	rc = mt_remotes_list(&list, &n, &err);
	tap_ok(rc == MT_EIO && strstr(err.message, path), "a directory is not a configuration: %s",
	       err.message);
	rmdir(path);

	/* Without MATORAGE_CONFIG: $XDG_CONFIG_HOME, then ~/.config. */
	unsetenv("MATORAGE_CONFIG");
	char xdg[300], home[300], want[400];
	snprintf(xdg, sizeof xdg, "%s/xdg", dir);
	snprintf(home, sizeof home, "%s/home", dir);
	setenv("XDG_CONFIG_HOME", xdg, 1);
	setenv("HOME", home, 1);
	TAP_CALL(mt_remote_add(&origin, 0, &err), &err, "add under $XDG_CONFIG_HOME");
	snprintf(want, sizeof want, "%s/matorage/config.json", xdg);
	tap_ok(stat(want, &sb) == 0, "the file is $XDG_CONFIG_HOME/matorage/config.json");
	unlink(want);
	snprintf(want, sizeof want, "%s/matorage", xdg);
	rmdir(want);
	rmdir(xdg);
	/* The XDG rules ignore a relative $XDG_CONFIG_HOME. */
	setenv("XDG_CONFIG_HOME", "relative", 1);
	TAP_CALL(mt_remote_add(&origin, 0, &err), &err, "add with a relative $XDG_CONFIG_HOME");
	snprintf(want, sizeof want, "%s/.config/matorage/config.json", home);
	tap_ok(stat(want, &sb) == 0, "the file is ~/.config/matorage/config.json");
	TAP_CALL(mt_remote_remove("origin", &err), &err, "remove it there");
	unlink(want);
	snprintf(want, sizeof want, "%s/.config/matorage", home);
	rmdir(want);
	snprintf(want, sizeof want, "%s/.config", home);
	rmdir(want);
	rmdir(home);

	rmdir(sub);
	tap_ok(rmdir(dir) == 0, "nothing else was left in the temporary directory");
	return tap_done();
}
