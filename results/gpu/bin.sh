# results/gpu/bin.sh, sourced (with $root the repository root) by quick.sh
# and fidelity.sh on the GPU machine: build.sh packs the binaries with gzip
# (.cuda/gpnb.gz, .cuda/cuda.test.gz), so that a device call's working tree
# (the tracked files, committed checkpoints included, and .cuda) stays well
# under the device tool's 64 MiB. This unpacks them into /tmp/gpnb-bin and
# sets GPNB and TEST to them, unless already set; unpacked binaries in
# .cuda are used as they are.
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
