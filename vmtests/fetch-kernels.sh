#!/bin/bash
# fetch-kernels.sh [CACHE_DIR]: fetch the Debian cloud kernels the VM tests
# boot (one 6.1, one 6.12) with `apt-get download`, into
#   CACHE_DIR/<release>/{vmlinuz,vmlinux,config}
# (default ${VMTEST_CACHE:-$HOME/.cache/sandbox-bpf/kernels}). vmlinux is the
# ELF kernel decompressed from vmlinuz's payload, for a faster boot; it is
# kept only when its size matches the one recorded in the bzImage.
# Per series: the preferred version if the registry or the cache has it, else
# the newest the registry has, else the newest cached. Idempotent.
# Environment: VMTEST_PREFER_6_1, VMTEST_PREFER_6_12 (package names).
set -euo pipefail

cache=${1:-${VMTEST_CACHE:-$HOME/.cache/sandbox-bpf/kernels}}
prefer_61=${VMTEST_PREFER_6_1:-linux-image-6.1.0-56-cloud-amd64}
prefer_612=${VMTEST_PREFER_6_12:-linux-image-6.12.117+deb12-cloud-amd64}

die() { echo "fetch-kernels: $*" >&2; exit 1; }
say() { echo "fetch-kernels: $*"; }

mkdir -p "$cache" || die "cannot create the kernel cache $cache"

release_of() { echo "${1#linux-image-}"; } # package name -> kernel release
cached() { [ -s "$cache/$(release_of "$1")/vmlinuz" ]; }

# apt options: empty (the system's sources) until private_lists switches
# to a private configuration.
APT_OPTS=()

# Registry candidates for a series, newest first (apt-cache reads local lists).
candidates() { # REGEX
	apt-cache "${APT_OPTS[@]}" pkgnames linux-image- 2>/dev/null | grep -E "$1" | sort -rV || true
}

# The system's sources may lack bookworm-security, where Debian publishes
# the 6.12 cloud kernels (a minimal debootstrap has only "bookworm main").
# Rather than edit the system's apt configuration, read Debian's own
# suites into lists kept in the cache, signed by Debian's archive keyring.
private_used=
private_lists() {
	[ -z "$private_used" ] || return 1
	private_used=1
	local d=$cache/.apt key=/usr/share/keyrings/debian-archive-keyring.gpg arch
	[ -r "$key" ] || { say "no $key (apt-get install debian-archive-keyring)"; return 1; }
	arch=$(dpkg --print-architecture)
	mkdir -p "$d/lists/partial" "$d/cache/archives/partial"
	{
		echo "deb [arch=$arch signed-by=$key] http://deb.debian.org/debian bookworm main"
		echo "deb [arch=$arch signed-by=$key] http://deb.debian.org/debian bookworm-updates main"
		echo "deb [arch=$arch signed-by=$key] http://deb.debian.org/debian-security bookworm-security main"
	} > "$d/sources.list"
	APT_OPTS=(-o "Dir::Etc::SourceList=$d/sources.list" -o "Dir::Etc::SourceParts=$d/none"
		-o "Dir::State::Lists=$d/lists" -o "Dir::Cache=$d/cache")
	say "reading Debian's bookworm, bookworm-updates and bookworm-security lists into $d"
	if ! apt-get "${APT_OPTS[@]}" update -qq >&2; then
		say "apt-get update of the private lists failed"
		APT_OPTS=()
		return 1
	fi
	return 0
}

apt_updated=
refresh_lists() {
	[ -z "$apt_updated" ] || return 0
	apt_updated=1
	if [ "$(id -u)" = 0 ]; then
		say "no candidates in the package lists: running apt-get update"
		apt-get update -qq >&2 || say "apt-get update failed"
	else
		say "no candidates in the package lists (run 'apt-get update' as root)"
	fi
}

# u32 little-endian at byte OFFSET of FILE
u32() { od -An -tu4 -j "$2" -N4 "$1" | tr -d ' '; }

# Decompress the bzImage payload into an ELF vmlinux; keep it only if whole.
extract_vmlinux() { # VMLINUZ OUT
	local z=$1 out=$2 setup_sects payload_off payload_len start want magic
	setup_sects=$(od -An -tu1 -j $((0x1f1)) -N1 "$z" | tr -d ' ')
	[ "$setup_sects" != 0 ] || setup_sects=4
	payload_off=$(u32 "$z" $((0x248)))
	payload_len=$(u32 "$z" $((0x24c)))
	start=$(((setup_sects + 1) * 512 + payload_off))
	# The payload ends with the decompressed size (le32).
	want=$(u32 "$z" $((start + payload_len - 4)))
	magic=$(od -An -tx1 -j "$start" -N4 "$z" | tr -d ' ')
	local dec
	case "$magic" in
	02214c18) dec="lz4 -dc" ;;
	28b52ffd) dec="zstd -dcq" ;;
	1f8b*) dec="gzip -dc" ;;
	fd377a58) dec="xz -dc" ;;
	*) say "unknown payload compression (magic $magic): keeping vmlinuz only"; return 1 ;;
	esac
	command -v "${dec%% *}" >/dev/null ||
		{ say "${dec%% *} not installed (apt-get install ${dec%% *}): keeping vmlinuz only"; return 1; }
	tail -c +$((start + 1)) "$z" | head -c $((payload_len - 4)) | $dec > "$out.tmp" 2>/dev/null || true
	if [ "$(stat -c %s "$out.tmp")" = "$want" ] &&
		[ "$(od -An -tx1 -N4 "$out.tmp" | tr -d ' ')" = 7f454c46 ]; then
		mv "$out.tmp" "$out"
		return 0
	fi
	rm -f "$out.tmp"
	say "vmlinux extraction from $z gave a wrong size: keeping vmlinuz only"
	return 1
}

fetch() { # PACKAGE
	local pkg=$1 rel dir tmp deb
	rel=$(release_of "$pkg")
	dir=$cache/$rel
	tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
	say "downloading $pkg"
	if ! (cd "$tmp" && apt-get "${APT_OPTS[@]}" download -q "$pkg" >&2 2>"$tmp/apt.err"); then
		cat "$tmp/apt.err" >&2 || true
		rm -rf "$tmp"
		return 1
	fi
	deb=$(ls "$tmp"/*.deb)
	mkdir -p "$tmp/x"
	dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp/x" --wildcards './boot/vmlinuz-*' './boot/config-*'
	[ -s "$tmp/x/boot/vmlinuz-$rel" ] || { rm -rf "$tmp"; die "$deb has no boot/vmlinuz-$rel"; }
	rm -rf "$dir"
	mkdir -p "$dir"
	mv "$tmp/x/boot/vmlinuz-$rel" "$dir/vmlinuz"
	mv "$tmp/x/boot/config-$rel" "$dir/config" 2>/dev/null || true
	basename "$deb" > "$dir/package"
	rm -rf "$tmp"
	return 0
}

ensure_vmlinux() { # RELEASE
	local dir=$cache/$1
	[ -s "$dir/vmlinux" ] || [ -e "$dir/vmlinux.failed" ] && return 0
	if ! extract_vmlinux "$dir/vmlinuz" "$dir/vmlinux"; then
		: > "$dir/vmlinux.failed"
	fi
}

pick() { # SERIES PREFERRED REGEX
	local series=$1 prefer=$2 regex=$3 cands pkg
	if cached "$prefer"; then
		pkg=$prefer
	else
		cands=$(candidates "$regex")
		[ -n "$cands" ] || { refresh_lists; cands=$(candidates "$regex"); }
		# The preferred (tested) version may be only in bookworm-security.
		if ! printf '%s\n' "$cands" | grep -qxF "$prefer" && private_lists; then
			cands=$(candidates "$regex")
		fi
		if printf '%s\n' "$cands" | grep -qxF "$prefer"; then
			pkg=$prefer
		else
			pkg=$(printf '%s\n' "$cands" | head -n 1)
		fi
		if [ -n "$pkg" ] && ! cached "$pkg" && ! fetch "$pkg"; then
			say "cannot download $pkg"
			pkg=
		fi
		if [ -z "$pkg" ]; then # fall back to the newest cached kernel of the series
			pkg=$(for d in "$cache"/*/; do basename "$d"; done | grep -E "${regex#^linux-image-}" | sort -rV |
				while read -r r; do cached "linux-image-$r" && { echo "linux-image-$r"; break; }; done)
			[ -n "$pkg" ] && say "using the cached $(release_of "$pkg")"
		fi
	fi
	[ -n "$pkg" ] || return 1
	ensure_vmlinux "$(release_of "$pkg")"
	local dir images
	dir=$cache/$(release_of "$pkg")
	images=$(cd "$dir" && for f in vmlinux vmlinuz; do [ -s "$f" ] && printf '%s ' "$f"; done; true)
	say "$series: $(release_of "$pkg") in $dir (${images% })"
	return 0
}

missing=
pick 6.1 "$prefer_61" '^linux-image-6\.1\.0-[0-9]+-cloud-amd64$' || missing="$missing 6.1"
pick 6.12 "$prefer_612" '^linux-image-6\.12\.[0-9]+\+deb[0-9]+-cloud-amd64$' || missing="$missing 6.12"
[ -z "$missing" ] || die "could not fetch a cloud kernel for:$missing (is apt configured for Debian bookworm and bookworm-security? try 'apt-get update')"
