#!/usr/bin/env bash
# install-deps.sh installs what gpnb's tests and notebooks need, and only what
# is missing, so it is cheap to run again:
#   - Debian packages: gcc and g++ (cgo: the openblas tag, the cudaemu
#     tests' C++20 kernels), chromium (chart screenshots), Jupyter's nbconvert and
#     nbclient with ipykernel (headless notebook runs), OpenBLAS (the openblas
#     build tag of make and of the notebooks' first cell), nodejs/npm (the
#     local echarts copy);
#   - the Go tools pinned in tools/go.mod (gonb, goimports, gopls,
#     staticcheck), installed into $(go env GOPATH)/bin;
#   - the GoNB Jupyter kernel (gonb --install);
#   - with the step slurm, Debian's Slurm and munge (slurmctld, slurmd,
#     slurm-client, munge) for scripts/slurm/test-local.sh.
# Usage: scripts/install-deps.sh [apt|tools|kernel|slurm]...   (default: apt tools kernel)
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '\n==> %s\n' "$*"; }

apt_deps() {
	say "system packages"
	local want=(gcc g++ chromium jupyter-nbconvert python3-nbclient python3-ipykernel libopenblas-dev)
	command -v node >/dev/null 2>&1 || want+=(nodejs)
	command -v npm >/dev/null 2>&1 || want+=(npm)
	apt_install "${want[@]}"
}

slurm_deps() {
	say "Slurm and munge (scripts/slurm/test-local.sh)"
	apt_install slurmctld slurmd slurm-client munge python3
}

# apt_install installs the Debian packages among its arguments that are
# missing (apt-get update first), as root or with sudo.
apt_install() {
	local want=("$@")
	local missing=()
	for p in "${want[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	if [ ${#missing[@]} -eq 0 ]; then
		echo "all present: ${want[*]}"
		return
	fi
	echo "missing: ${missing[*]}"
	local sudo=()
	if [ "$(id -u)" -ne 0 ]; then
		command -v sudo >/dev/null 2>&1 || { echo "install-deps: need root (or sudo) to apt-get install ${missing[*]}" >&2; exit 1; }
		sudo=(sudo)
	fi
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
}

go_tools() {
	say "Go tools (tools/go.mod: gonb, goimports, gopls, staticcheck)"
	(cd tools && go install tool)
	local bin
	bin="$(go env GOPATH)/bin"
	for t in gonb goimports gopls staticcheck; do
		[ -x "$bin/$t" ] || { echo "install-deps: $bin/$t missing after 'go install tool'" >&2; exit 1; }
	done
	echo "installed in $bin: gonb goimports gopls staticcheck"
}

gonb_kernel() {
	say "GoNB Jupyter kernel"
	local bin
	bin="$(go env GOPATH)/bin"
	# gonb --install checks that goimports and gopls are on PATH.
	PATH="$bin:$PATH" "$bin/gonb" --install --logtostderr=false
	local spec
	spec="$(/usr/bin/python3 -c 'import jupyter_core.paths as p; print(p.jupyter_data_dir())')/kernels/gonb/kernel.json"
	[ -f "$spec" ] || { echo "install-deps: gonb kernel spec not found at $spec" >&2; exit 1; }
	echo "kernel spec: $spec"
}

steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(apt tools kernel)
for s in "${steps[@]}"; do
	case "$s" in
	apt) apt_deps ;;
	tools) go_tools ;;
	kernel) gonb_kernel ;;
	slurm) slurm_deps ;;
	*) echo "install-deps: unknown step $s (use apt, tools, kernel or slurm)" >&2; exit 2 ;;
	esac
done
