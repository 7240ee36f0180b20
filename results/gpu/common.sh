# results/gpu/common.sh, sourced by quick.sh and fidelity.sh on the GPU
# machine, with $root the repository root:
#
#   - build.sh packs the binaries with gzip (.cuda/gpnb.gz,
#     .cuda/cuda.test.gz), so that a device call's working tree (the tracked
#     files, committed checkpoints included, and .cuda) stays well under the
#     device tool's 64 MiB; they are unpacked into /tmp/gpnb-bin, and GPNB
#     and TEST point to them unless already set (unpacked binaries in .cuda
#     are used as they are);
#   - GPNB_DATA defaults to the data build.sh copied into .cuda/uci;
#   - note and stage log to $sum, stage's time limit coming from the
#     script's own budget function and its kill grace from $grace.
gpubin=/tmp/gpnb-bin
mkdir -p "$gpubin"
for f in gpnb cuda.test; do
	if [ -f "$root/.cuda/$f.gz" ]; then
		gunzip -c "$root/.cuda/$f.gz" >"$gpubin/$f" && chmod +x "$gpubin/$f"
	elif [ -f "$root/.cuda/$f" ]; then
		cp "$root/.cuda/$f" "$gpubin/$f"
	fi
done
GPNB=${GPNB:-$gpubin/gpnb}
TEST=${TEST:-$gpubin/cuda.test}
export GPNB_DATA=${GPNB_DATA:-$root/.cuda/uci}

# note TEXT: prints TEXT and appends it to the call's summary log.
note() { echo "$*" | tee -a "$sum"; }

# stage NAME ARG CMD...: runs CMD for at most $(budget ARG) seconds (0:
# skipped, no time left), SIGINT first so that gpnb saves its checkpoint and
# stops cleanly, SIGKILL $grace seconds later; logs its exit status and time.
stage() {
	local name=$1 t
	t=$(budget "$2")
	shift 2
	if ((t == 0)); then
		note "$name: skipped (no time left)"
		return 1
	fi
	local t0=$SECONDS
	timeout -s INT -k "$grace" "$t" "$@"
	local rc=$?
	note "$name: exit $rc in $((SECONDS - t0)) s (limit $t s)"
	return $rc
}
