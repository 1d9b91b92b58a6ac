#!/bin/sh
# Installs service-server from a release: picks the archive for this OS and CPU, verifies it
# against the release's SHA256SUMS, and installs the binary to <prefix>/bin (default ~/.local).
# Refuses, installing nothing, when the checksum does not match or is missing.
#
#   sh install.sh --from <release URL or directory> [--prefix <dir>] [--version <x.y.z>]
#
# The release location may also be given as SERVICE_SERVER_RELEASE_URL. Needs: uname, tar,
# sha256sum or shasum, and curl or wget for URLs. POSIX sh; no bashisms.
set -eu

usage() {
	echo "usage: sh install.sh --from <release URL or directory> [--prefix <dir>] [--version <x.y.z>]" >&2
	exit 2
}

fail() {
	echo "install.sh: $*" >&2
	exit 1
}

from="${SERVICE_SERVER_RELEASE_URL:-}"
prefix="${HOME:?HOME is not set}/.local"
version=""
while [ $# -gt 0 ]; do
	case "$1" in
	--from) [ $# -ge 2 ] || usage; from="$2"; shift 2 ;;
	--from=*) from="${1#--from=}"; shift ;;
	--prefix) [ $# -ge 2 ] || usage; prefix="$2"; shift 2 ;;
	--prefix=*) prefix="${1#--prefix=}"; shift ;;
	--version) [ $# -ge 2 ] || usage; version="$2"; shift 2 ;;
	--version=*) version="${1#--version=}"; shift ;;
	-h | --help) usage ;;
	*) echo "install.sh: unknown argument $1" >&2; usage ;;
	esac
done
[ -n "$from" ] || usage
from="${from%/}"

case "$(uname -s)" in
Linux) os=linux ;;
Darwin) os=darwin ;;
*) fail "no release for $(uname -s); on Windows download the windows-x64 zip and check it against SHA256SUMS" ;;
esac
case "$(uname -m)" in
x86_64 | amd64) cpu=x64 ;;
aarch64 | arm64) cpu=arm64 ;;
*) fail "no release for the CPU $(uname -m)" ;;
esac
target="$os-$cpu"

tmp="$(mktemp -d 2>/dev/null || mktemp -d -t service-server)"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

# fetch <name> <destination>: from a URL (curl or wget) or a local directory.
fetch() {
	case "$from" in
	http://* | https://*)
		if command -v curl >/dev/null 2>&1; then
			curl -fsSL --proto '=http,https' -o "$2" "$from/$1" || fail "could not download $from/$1"
		elif command -v wget >/dev/null 2>&1; then
			wget -q -O "$2" "$from/$1" || fail "could not download $from/$1"
		else
			fail "curl or wget is needed to download from $from"
		fi
		;;
	*)
		[ -f "$from/$1" ] || fail "$from/$1 does not exist"
		cp "$from/$1" "$2"
		;;
	esac
}

sha256() {
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum "$1" | cut -d ' ' -f 1
	elif command -v shasum >/dev/null 2>&1; then
		shasum -a 256 "$1" | cut -d ' ' -f 1
	else
		fail "sha256sum or shasum is needed to verify the download"
	fi
}

fetch SHA256SUMS "$tmp/SHA256SUMS"
# The archive for this platform: the requested version, else the one SHA256SUMS lists.
if [ -n "$version" ]; then
	archive="service-server-$version-$target.tar.gz"
else
	archive="$(awk '{print $2}' "$tmp/SHA256SUMS" | grep -E "^service-server-[0-9][^/ ]*-$target\.tar\.gz\$" | sort | tail -n 1 || true)"
	[ -n "$archive" ] || fail "SHA256SUMS at $from lists no archive for $target"
fi
expected="$(awk -v name="$archive" '$2 == name {print $1}' "$tmp/SHA256SUMS" | head -n 1)"
[ -n "$expected" ] || fail "SHA256SUMS at $from has no checksum for $archive; refusing to install"

fetch "$archive" "$tmp/$archive"
actual="$(sha256 "$tmp/$archive")"
if [ "$actual" != "$expected" ]; then
	fail "checksum mismatch for $archive (expected $expected, got $actual); nothing was installed"
fi

mkdir "$tmp/unpacked"
tar -xzf "$tmp/$archive" -C "$tmp/unpacked" || fail "could not unpack $archive"
binary="$tmp/unpacked/${archive%.tar.gz}/service-server"
[ -f "$binary" ] || fail "$archive does not hold service-server"

bin="$prefix/bin"
mkdir -p "$bin" || fail "cannot create $bin"
# Copy beside the target, then rename over it: a running copy keeps working, and an interrupted
# install never leaves a half-written binary under the real name.
cp "$binary" "$bin/.service-server.new.$$" || fail "cannot write to $bin"
chmod 755 "$bin/.service-server.new.$$"
mv -f "$bin/.service-server.new.$$" "$bin/service-server"

echo "installed $bin/service-server: $("$bin/service-server" --version)"
case ":${PATH:-}:" in
*":$bin:"*) ;;
*) echo "note: $bin is not on your PATH; add it, e.g. export PATH=\"$bin:\$PATH\"" ;;
esac
