# rgw.sh — a one-node Ceph (one mon, one memstore OSD, one RADOS Gateway) on loopback, for
# the S3 suites to run against a real S3 server.  Sourced by lib.sh; everything lives under
# $WORK/ceph (no /etc/ceph, no /var/lib/ceph, no systemd) and only the processes started
# here are stopped, by PID.

CEPH_PIDS=()

# rgw_available: the Ceph daemons and tools (scripts/install-deps.sh) are installed.
rgw_available() {
	local b
	for b in ceph-mon ceph-osd radosgw radosgw-admin ceph-authtool monmaptool ceph; do
		command -v "$b" > /dev/null || return 1
	done
}

# rgw_conf DIR MON_PORT FSID: the cluster's one configuration file (the OSD holds
# RGW_MEMSTORE_BYTES, 3 GiB by default).  Pools of one
# replica on one OSD with no CRUSH host level, in memory: nothing touches the disk but logs.
rgw_conf() {
	local d=$1
	cat <<CONF
[global]
fsid = $3
mon_host = v2:127.0.0.1:$2
run_dir = $d/run
log_file = $d/log/\$name.log
admin_socket = $d/run/\$name.asok
keyring = $d/keyring
auth_cluster_required = cephx
auth_service_required = cephx
auth_client_required = cephx
ms_bind_ipv6 = false
osd_pool_default_size = 1
osd_pool_default_min_size = 1
mon_allow_pool_size_one = true
mon_warn_on_pool_no_redundancy = false
osd_pool_default_pg_num = 8
osd_pool_default_pgp_num = 8
osd_crush_chooseleaf_type = 0
osd_pool_default_pg_autoscale_mode = off
[mon.a]
mon_data = $d/mon
public_addr = 127.0.0.1
[osd.0]
osd_data = $d/osd
osd_objectstore = memstore
memstore_device_bytes = ${RGW_MEMSTORE_BYTES:-3221225472}
[client.rgw]
rgw_dns_name = s3.localhost
rgw_data = $d/rgw
CONF
}

# rgw_setup: keys, monitor map and the monitor's store of a new cluster under $CEPH_DIR.
rgw_setup() {
	local d=$CEPH_DIR fsid
	fsid=$(cat /proc/sys/kernel/random/uuid)
	mkdir -p "$d/run" "$d/log" "$d/mon" "$d/osd" "$d/rgw"
	rgw_conf "$d" "$(free_port)" "$fsid" > "$d/ceph.conf"
	ceph-authtool --create-keyring "$d/keyring" --gen-key -n mon. --cap mon 'allow *' &&
		ceph-authtool "$d/keyring" --gen-key -n client.admin --cap mon 'allow *' \
			--cap osd 'allow *' --cap mgr 'allow *' &&
		ceph-authtool "$d/keyring" --gen-key -n osd.0 --cap mon 'allow profile osd' --cap osd 'allow *' &&
		ceph-authtool "$d/keyring" --gen-key -n client.rgw --cap mon 'allow rw' --cap osd 'allow rwx' &&
		monmaptool --create --fsid "$fsid" --addv a "[v2:$(sed -n 's/^mon_host = v2://p' "$d/ceph.conf")]" \
			"$d/monmap" &&
		ceph-mon -c "$d/ceph.conf" --id a --mkfs --monmap "$d/monmap" --keyring "$d/keyring"
}

# rgw_gateway: start radosgw on $S3_PORT (again, after s3_kill: same data) and add it to S3_PIDS.
rgw_gateway() {
	radosgw -f -c "$CEPH_DIR/ceph.conf" -n client.rgw --rgw_frontends "beast endpoint=127.0.0.1:$S3_PORT" \
		>> "$CEPH_DIR/log/radosgw.out" 2>&1 &
	S3_PIDS+=($!)
}

# rgw_launch: the cluster (once per test script), a user with the test's key pair, and the
# gateway answering on $S3_PORT; at most about 60 s.
rgw_launch() {
	local c
	if [ ${#CEPH_PIDS[@]} -eq 0 ]; then
		CEPH_DIR=$WORK/ceph
		rgw_setup > "$WORK/ceph-setup.log" 2>&1 || { tail -n 5 "$WORK/ceph-setup.log" >&2; return 1; }
		c=(-c "$CEPH_DIR/ceph.conf")
		# -f: in the foreground, so $! is the daemon itself.
		ceph-mon -f "${c[@]}" --id a >> "$CEPH_DIR/log/mon.out" 2>&1 &
		CEPH_PIDS+=($!)
		# The OSD's store is made once the monitor answers (it asks it for its configuration).
		timeout 30 ceph "${c[@]}" osd create > /dev/null 2>> "$WORK/ceph-setup.log" &&
			timeout 30 ceph-osd "${c[@]}" --id 0 --mkfs --osd-uuid "$(cat /proc/sys/kernel/random/uuid)" \
				>> "$WORK/ceph-setup.log" 2>&1 || return 1
		ceph-osd -f "${c[@]}" --id 0 >> "$CEPH_DIR/log/osd.out" 2>&1 &
		CEPH_PIDS+=($!)
		# The key pair every client of the tests signs with (test-only values, see s3_start).
		timeout 60 radosgw-admin "${c[@]}" user create --uid=mt-test --display-name=mt-test \
			--access-key="$AWS_ACCESS_KEY_ID" --secret-key="$AWS_SECRET_ACCESS_KEY" \
			> /dev/null 2>> "$WORK/ceph-setup.log" || return 1
	fi
	rgw_gateway
	s3_wait "http://127.0.0.1:$S3_PORT/" && return 0
	tail -n 5 "$CEPH_DIR/log/client.rgw.log" "$WORK/ceph-setup.log" 2> /dev/null | sed 's/^/# rgw: /' >&2
	return 1
}

# rgw_reap PID: wait for a process told to stop; one still there after 10 s (radosgw with
# requests blocked on a full OSD ignores SIGTERM) is killed.
rgw_reap() {
	for _ in $(seq 100); do
		kill -0 "$1" 2> /dev/null || break
		sleep 0.1
	done
	kill -9 "$1" 2> /dev/null
	wait "$1" 2> /dev/null
}

# rgw_stop: the monitor and the OSD, last (the gateway is in S3_PIDS); the data goes with $WORK.
rgw_stop() {
	local p
	for p in "${CEPH_PIDS[@]}"; do kill "$p" 2> /dev/null; done
	for p in "${CEPH_PIDS[@]}"; do rgw_reap "$p"; done
	CEPH_PIDS=()
}
