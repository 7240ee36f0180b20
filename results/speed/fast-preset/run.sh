#!/bin/sh
# gpnb train --preset fast against scikit-learn's exact GP, and the
# measurements behind the preset's choices (results/speed/fast-preset/
# README.md), side by side on this machine. Each stage writes its files
# into out/ and is skipped when they exist, so rerunning finishes what an
# earlier run left; run it under nohup, alone: every ratio assumes both
# sides saw the same load, and each measurement records the load before and
# after it (out/meta-NAME.json). RENDER_ONLY=1 only renders tables.md.
#
#   STAGES="fast2000 curve2000 fast4000 curve4000 full fulltext fullrank ablation stop bench curvefull crossover suite seeds" sh results/speed/fast-preset/run.sh
#
# The fast preset takes the exact path (Cholesky + L-BFGS) up to
# gpnb.FastExactUpTo training points, and finishes Adam's run on it up to
# gpnb.FastFinishConvergedUpTo, or up to gpnb.FastFinishExactUpTo where σ
# nears its floor; every stage but crossover, suite and seeds measures
# its iterative path alone (CG + warm start, Adam), so it passes
# --exact-up-to 0 --finish-exact-up-to 0.
# fastN:     pol split 0, N training points (subset seed 58); the subset is
#            exported to CSV (export.go) and fitted by scikit-learn
#            (sklearn_fit.py) right after gpnb train --preset fast (each
#            is redone, next to the other, when its file is deleted).
# curveN:    CG iterations against preconditioner rank at scikit-learn's θ
#            of fastN (gpnb solve, mixed precision, 64 probes, from zero);
#            curvefull at the θ of results/speed's full-size mixed run.
# full:      full pol, CG + warm start, 100 steps, the paper's settings in
#            float64, then the same with --precision mixed --precond-rank auto.
# fulltext:  the same pair under the paper's text's stopping rules
#            (--rules paper-text: columns freeze one by one).
# fullrank:  fulltext's mixed run at fixed ranks 256 and 512.
# (full-auto310 and fulltext-auto310 are full-fast and fulltext-fast run on
# build daf5a86, whose automatic rank was capped at 310 at full size; no
# stage reruns them.)
# ablation:  at n = 2000, the fast preset with one choice changed at a time.
# stop:      the fast preset until converged and for 200 steps on 2000
#            points of elevators and on a synthetic set.
# bench:     BenchmarkPrecond (a preconditioned CG iteration over a plain one).
# suite:     the fast preset beside scikit-learn on data of every character,
#            the sets of $SUITE (SET:N:SEED words; SET a UCI set, or
#            noiseless or duplicates, characters.go's made-up sets; up to
#            n = 1000 also the preset on its exact path, up to 4000
#            (gpnb.FastFinishExactUpTo) also without the exact finish), each
#            fit run alone: it waits for the 1-minute load to fall to
#            $LOADMAX (2.5) and refuses to record a fit whose load before or
#            after was above it.
# seeds:     the fast preset beside scikit-learn only, each pair as the
#            suite's, on the sets of $SEEDS (default: 400 points of every
#            UCI set, subset seeds 1 to 6).
# crossover: the fast preset off its exact path (--exact-up-to 0: Adam,
#            with the exact finish up to gpnb.FastFinishConvergedUpTo) against its
#            exact path (--exact-up-to 20000, every n) on CROSSOVER_N
#            training points (default 100 250 500 1000 2000) of CROSSOVER_DATA
#            (default pol elevators; any of $CROSSOVER_SETS: UCI sets'
#            split 0, subset seed 58, the suite's made-up sets, or smooth2,
#            the built-in synthetic set with 2 inputs), each pair
#            one run right after the other, each run alone as the suite's:
#            where the exact path stops being the faster (gpnb.FastExactUpTo;
#            DESIGN.md).
# lbfgs/ (run by hand, see lbfgs/main.go): Adam against L-BFGS.
set -eu
cd "$(dirname "$0")/../../.."
. scripts/results.sh # GPNB, GPNB_DATA
D=results/speed/fast-preset
OUT=$D/out
WORK=${WORK:-${TMPDIR:-/tmp}/gpnb-fast-preset}
mkdir -p "$OUT" "$WORK"
PY=/usr/bin/python3 # Debian's, with python3-sklearn
SEED=58
BUILD=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!results' || echo "+dirty")

# measure NAME CMD...: runs CMD, writing $OUT/meta-NAME.json with the
# command, the build, the machine and its 1-minute load before and after.
measure() {
	what=$1
	shift
	before=$(uptime)
	t0=$(date +%s.%N)
	"$@"
	t1=$(date +%s.%N)
	after=$(uptime)
	load() { echo "$1" | sed 's/.*load average: *//; s/,.*//'; }
	cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: *//')
	jq -n --arg command "$*" --arg build "$BUILD" --arg date "$(date -u '+%Y-%m-%d %H:%M')" --arg cpu "$cpu" \
		--arg before "$before" --arg after "$after" --argjson t0 "$t0" --argjson t1 "$t1" \
		--argjson lb "$(load "$before")" --argjson la "$(load "$after")" --argjson nproc "$(nproc)" \
		'{command: $command, build: $build, date: $date, wall_seconds: ($t1 - $t0), nproc: $nproc, cpu: $cpu,
		  uptime_before: $before, uptime_after: $after, load_before: $lb, load_after: $la}' >"$OUT/meta-$what.json"
}

theta_of() { # θ flags of a scikit-learn fit's JSON
	jq -r '"--noise \(.noise) --signal \(.signal) --lengthscales \(.lengthscales | map(tostring) | join(","))"' "$1"
}

train() { # name flags...: one gpnb train run into out/NAME.json
	name=$1
	shift
	[ -f "$OUT/$name.json" ] || measure "$name" "$GPNB" train "$@" --residuals=false --quiet --json "$OUT/$name.json"
}

fast() { # n
	n=$1
	train "gpnb-$n" --data pol --split 0 --subset "$n" --subset-seed $SEED --preset fast --exact-up-to 0 --finish-exact-up-to 0
	[ -f "$OUT/sklearn-$n.json" ] && return 0
	go run $D/export.go -data pol -split 0 -subset "$n" -subset-seed $SEED -out "$WORK/pol-$n"
	measure "sklearn-$n" sh -c "$PY $D/sklearn_fit.py $WORK/pol-$n > $OUT/sklearn-$n.json.tmp && mv $OUT/sklearn-$n.json.tmp $OUT/sklearn-$n.json"
}

curve() { # name data-flags θ-flags ranks
	name=$1 dflags=$2 theta=$3 ranks=$4
	for r in $ranks; do
		f="$OUT/curve-$name-$r.json"
		[ -f "$f" ] && continue
		# shellcheck disable=SC2086
		measure "curve-$name-$r" "$GPNB" solve $dflags --solver cg --precision mixed --probes 64 --precond-rank "$r" $theta --json "$f"
	done
}

LOADMAX=${LOADMAX:-2.5}
SUITE=${SUITE:-"noiseless:400:0 duplicates:400:0 elevators:400:58 bike:400:58 protein:300:58 noiseless:2000:0 duplicates:2000:0 pol:2000:58 elevators:2000:58 bike:2000:58 protein:2000:58 keggdirected:2000:58 elevators:2000:1 protein:2000:2 pol:4000:58 bike:4000:58 elevators:4000:58 protein:4000:58 keggdirected:4000:58 noiseless:4000:0 duplicates:4000:0 smooth2:4000:0"}

above() { awk -v l="$1" -v m="$LOADMAX" 'BEGIN { exit !(l > m) }'; }

# alone NAME CMD...: CMD (a measurement writing $OUT/NAME.json) once the
# 1-minute load is at most $LOADMAX (waiting up to 20 minutes); a fit whose
# load before or after was above it is moved to $WORK/refused, not recorded.
alone() {
	an=$1
	shift
	[ -f "$OUT/$an.json" ] && return 0
	i=0
	while above "$(cut -d' ' -f1 /proc/loadavg)"; do
		i=$((i + 1))
		[ $i -le 80 ] || { echo "refused $an: the load stayed above $LOADMAX" >&2; return 0; }
		sleep 15
	done
	"$@"
	[ -f "$OUT/meta-$an.json" ] || return 0
	if above "$(jq .load_before "$OUT/meta-$an.json")" || above "$(jq .load_after "$OUT/meta-$an.json")"; then
		mkdir -p "$WORK/refused"
		mv "$OUT/$an.json" "$OUT/meta-$an.json" "$WORK/refused/" 2>/dev/null || true
		echo "refused $an: the load was above $LOADMAX (kept in $WORK/refused)" >&2
	fi
}

# dataflags SET N SEED: sets dflags (gpnb train's) and eflags (export.go's)
# to N training points of SET: a UCI set's split 0, subset seed SEED,
# characters.go's made-up noiseless or duplicates set, or smooth2, N points
# of the built-in synthetic set with 2 inputs (SEED unused for these).
dataflags() {
	set=$1 n=$2 seed=$3
	case $set in
	smooth2)
		dflags="--data synthetic-$n-2-1"
		eflags="-data synthetic-$n-2-1" ;;
	noiseless | duplicates)
		[ -f "$WORK/chars-$n/$set-$n-train.csv" ] || go run $D/characters.go -n "$n" -out "$WORK/chars-$n"
		dflags="--data $WORK/chars-$n/$set-$n-train.csv --test $WORK/chars-$n/$set-$n-test.csv"
		eflags="-data $WORK/chars-$n/$set-$n-train.csv -test $WORK/chars-$n/$set-$n-test.csv" ;;
	*)
		dflags="--data $set --split 0 --subset $n --subset-seed $seed"
		eflags="-data $set -split 0 -subset $n -subset-seed $seed" ;;
	esac
}

# pair KIND SET N SEED: the fast preset and scikit-learn on the same data,
# out/KIND-gpnb-SET-N-sSEED.json and out/KIND-sklearn-SET-N-sSEED.json; it
# leaves n, pair (SET-N-sSEED) and dflags set for suite.
pair() {
	kind=$1 set=$2 n=$3 seed=$4
	pair=$set-$n-s$seed
	dataflags "$set" "$n" "$seed"
	# shellcheck disable=SC2086
	alone "$kind-gpnb-$pair" train "$kind-gpnb-$pair" $dflags --preset fast
	[ -f "$OUT/$kind-sklearn-$pair.json" ] && return 0
	# shellcheck disable=SC2086
	go run $D/export.go $eflags -out "$WORK/$pair"
	alone "$kind-sklearn-$pair" measure "$kind-sklearn-$pair" sh -c "$PY $D/sklearn_fit.py $WORK/$pair > $OUT/$kind-sklearn-$pair.json.tmp && mv $OUT/$kind-sklearn-$pair.json.tmp $OUT/$kind-sklearn-$pair.json"
}

# suite SET N SEED: one set of the suite, named SET-N-sSEED: pair, and the
# fast preset held to Adam (up to 4000 points) and sent to the exact path
# (up to 1000).
suite() {
	pair suite "$@"
	# shellcheck disable=SC2086
	[ "$n" -gt 4000 ] || alone "suite-adam-$pair" train "suite-adam-$pair" $dflags --preset fast --finish-exact-up-to 0
	# shellcheck disable=SC2086
	[ "$n" -gt 1000 ] || alone "suite-exact-$pair" train "suite-exact-$pair" $dflags --preset fast --exact-up-to 20000
}

# SEEDS: small subsets of every UCI set under several subset seeds, where
# the exact path's L-BFGS and scikit-learn's may end at different local
# optima.
SEEDS=${SEEDS:-$(for s in pol elevators bike protein keggdirected; do for i in 1 2 3 4 5 6; do printf '%s:400:%s ' $s $i; done; done)}
CURVE_RANKS_2000="0 50 100 200 400 800" CURVE_RANKS_4000="0 100 200 400 512 800" CURVE_RANKS_full="0 100 256 512"
CROSSOVER_SETS="pol elevators keggdirected bike protein noiseless duplicates smooth2" # the tables' order
CROSSOVER_DATA=${CROSSOVER_DATA:-pol elevators} CROSSOVER_N=${CROSSOVER_N:-100 250 500 1000 2000}
if [ "${RENDER_ONLY:-0}" != 1 ]; then
	for stage in ${STAGES:-fast2000 curve2000 fast4000 curve4000 full fulltext fullrank ablation stop bench curvefull crossover suite seeds}; do
		case $stage in
		fast2000) fast 2000 ;;
		fast4000) fast 4000 ;;
		curve2000) curve 2000 "--data pol --subset 2000 --subset-seed $SEED" "$(theta_of "$OUT/sklearn-2000.json")" "$CURVE_RANKS_2000" ;;
		curve4000) curve 4000 "--data pol --subset 4000 --subset-seed $SEED" "$(theta_of "$OUT/sklearn-4000.json")" "$CURVE_RANKS_4000" ;;
		curvefull) curve full "--data pol" "$(theta_of $D/full-theta.json)" "$CURVE_RANKS_full" ;;
		full)
			train full-float64 --data pol --solver cg --warm-start --steps 100
			train full-fast --data pol --solver cg --warm-start --steps 100 --precision mixed --precond-rank auto ;;
		fulltext)
			train fulltext-float64 --data pol --solver cg --warm-start --steps 100 --rules paper-text
			train fulltext-fast --data pol --solver cg --warm-start --steps 100 --rules paper-text --precision mixed --precond-rank auto ;;
		fullrank)
			for r in 512 256; do
				train "fulltext-rank$r" --data pol --solver cg --warm-start --steps 100 --rules paper-text --precision mixed --precond-rank $r
			done ;;
		ablation)
			steps=$(jq .steps_done "$OUT/gpnb-2000.json")
			for a in "probes16 --probes 16" "probes32 --probes 32" "seed1 --seed 1" "seed2 --seed 2" "softplus --param softplus --until steps --steps $steps" "steps200 --until steps --steps 200"; do
				# shellcheck disable=SC2086
				train "ablation-${a%% *}" --data pol --split 0 --subset 2000 --subset-seed $SEED --preset fast --exact-up-to 0 --finish-exact-up-to 0 ${a#* }
			done ;;
		stop)
			for ds in elevators synthetic-2000-8-3; do
				train "stop-$ds-200" --data "$ds" --split 0 --subset 2000 --subset-seed $SEED --preset fast --exact-up-to 0 --finish-exact-up-to 0 --until steps --steps 200
				train "stop-$ds" --data "$ds" --split 0 --subset 2000 --subset-seed $SEED --preset fast --exact-up-to 0 --finish-exact-up-to 0
			done ;;
		crossover)
			for ds in $CROSSOVER_DATA; do
				for n in $CROSSOVER_N; do
					dataflags "$ds" "$n" $SEED
					# shellcheck disable=SC2086
					alone "crossover-$ds-$n-iterative" train "crossover-$ds-$n-iterative" $dflags --preset fast --exact-up-to 0
					# shellcheck disable=SC2086
					alone "crossover-$ds-$n-exact" train "crossover-$ds-$n-exact" $dflags --preset fast --exact-up-to 20000
				done
			done ;;
		suite)
			for p in $SUITE; do
				suite $(echo "$p" | tr : ' ')
			done ;;
		seeds)
			for p in $SEEDS; do
				pair seeds $(echo "$p" | tr : ' ')
			done ;;
		bench)
			[ -f "$OUT/bench.txt" ] || measure bench sh -c "go test -tags openblas -run '^\$' -bench Precond -benchtime 40x ./solvers/ > $OUT/bench.txt.tmp && mv $OUT/bench.txt.tmp $OUT/bench.txt" ;;
		*) echo "unknown stage $stage" >&2; exit 2 ;;
		esac
	done
fi

# inputs_of SET: the number of inputs d of a crossover set, from its runs.
inputs_of() {
	for f in "$OUT"/crossover-"$1"-*-exact.json; do
		jq .d "$f"
		return
	done
}

# inputs LABEL=FILE...: the --in list of those files that exist.
inputs() {
	list=""
	for x in "$@"; do
		[ -f "${x#*=}" ] && list="$list${list:+,}$x"
	done
	echo "$list"
}
# table IN ARGS...: gpnb table --in IN ARGS..., or nothing when IN is empty.
table() {
	[ -n "$1" ] || return 0
	in=$1
	shift
	"$GPNB" table --in "$in" "$@"
	echo
}
# pairtable KIND LIST TITLE [LABEL=RUN]...: the versus table of pair's runs
# of KIND (scikit-learn the reference) over the SET:N:SEED words of LIST,
# each set's out/KIND-RUN-SET-N-sSEED.json beside them labelled LABEL (~: a
# space).
pairtable() {
	kind=$1 list=$2 title=$3
	shift 3
	files=""
	for p in $list; do
		name=$(echo "$p" | sed 's/:\([0-9]*\):/-\1-s/')
		files="$files $name:~scikit-learn=$OUT/$kind-sklearn-$name.json $name:~gpnb~--preset~fast=$OUT/$kind-gpnb-$name.json"
		for x in "$@"; do
			files="$files $name:~${x%%=*}=$OUT/$kind-${x#*=}-$name.json"
		done
	done
	# shellcheck disable=SC2086
	table "$(inputs $files | tr '~' ' ')" --table versus --title "$title"
}
{
	echo "# results/speed/fast-preset: tables"
	echo
	echo "Rendered by \`RENDER_ONLY=1 sh $D/run.sh\` (gpnb table) from out/; nothing is typed by hand."
	echo
	table "$(inputs \
		"scikit-learn=$OUT/sklearn-2000.json" "gpnb --preset fast=$OUT/gpnb-2000.json" \
		"16 probes=$OUT/ablation-probes16.json" "32 probes=$OUT/ablation-probes32.json" \
		"probe seed 1=$OUT/ablation-seed1.json" "probe seed 2=$OUT/ablation-seed2.json" \
		"softplus θ (as many steps)=$OUT/ablation-softplus.json" "200 steps=$OUT/ablation-steps200.json")" --table versus --title "pol, 2000 training points: the fast preset beside scikit-learn, and one choice changed at a time"
	table "$(inputs \
		"scikit-learn=$OUT/sklearn-4000.json" "gpnb --preset fast=$OUT/gpnb-4000.json")" --table versus --title "pol, 4000 training points: the fast preset beside scikit-learn"
	table "$(inputs \
		"float64=$OUT/full-float64.json" "mixed + automatic rank=$OUT/full-fast.json" \
		"mixed + automatic rank capped at 310 (daf5a86)=$OUT/full-auto310.json")" --table versus --title "Full pol, 100 steps: float64 against mixed precision with the preconditioner at the automatic rank"
	table "$(inputs \
		"float64=$OUT/fulltext-float64.json" "mixed + automatic rank=$OUT/fulltext-fast.json" \
		"mixed + rank 256=$OUT/fulltext-rank256.json" "mixed + rank 512=$OUT/fulltext-rank512.json" \
		"mixed + automatic rank capped at 310 (daf5a86)=$OUT/fulltext-auto310.json")" --table versus --title "Full pol, 100 steps, the paper's text's stopping rules: float64 against mixed precision with the preconditioner at the automatic rank and at fixed ranks"
	table "$(inputs \
		"full-float64=$OUT/full-float64.json" "full-fast=$OUT/full-fast.json" "full-auto310=$OUT/full-auto310.json" \
		"fulltext-float64=$OUT/fulltext-float64.json" "fulltext-fast=$OUT/fulltext-fast.json" \
		"fulltext-rank256=$OUT/fulltext-rank256.json" "fulltext-rank512=$OUT/fulltext-rank512.json" \
		"fulltext-auto310=$OUT/fulltext-auto310.json")" --table split --unit s
	for ds in elevators synthetic-2000-8-3; do
		table "$(inputs \
			"200 steps=$OUT/stop-$ds-200.json" "until converged=$OUT/stop-$ds.json")" --table versus --title "The stop on $ds (2000 points): 200 steps against until converged"
	done
	for ds in $CROSSOVER_SETS; do
		files=""
		for n in 100 250 500 1000 2000 4000 7500; do
			files="$files iterative-$n=$OUT/crossover-$ds-$n-iterative.json exact-$n=$OUT/crossover-$ds-$n-exact.json"
		done
		# shellcheck disable=SC2086
		table "$(inputs $files)" --table versus --title "The crossover on $ds (d = $(inputs_of "$ds")): the fast preset with --exact-up-to 0 (CG + warm start, Adam, and the exact finish up to gpnb.FastFinishConvergedUpTo points) against its exact path (Cholesky + L-BFGS), time to converge"
	done
	for name in 2000 4000 full; do
		eval "ranks=\$CURVE_RANKS_$name"
		files=""
		for r in $ranks; do
			files="$files $OUT/curve-$name-$r.json"
		done
		at="n = $name, at scikit-learn's θ"
		[ "$name" = full ] && at="all 13 500 training points, at the θ of results/speed's mixed run (full-theta.json)"
		# shellcheck disable=SC2086
		table "$(inputs $files)" --table jsonl --title "CG iterations against preconditioner rank: pol, $at" \
			--columns "n,precond_rank=rank,iteration=iterations,seconds:2=seconds,start_seconds:2=of which building P"
	done
	pairtable suite "$SUITE" "The suite: the fast preset beside scikit-learn on data of every character (SET-N-sSEED: a subset of N training points, subset seed SEED)" \
		"gpnb~--preset~fast~--finish-exact-up-to~0=adam" "gpnb~--preset~fast~--exact-up-to~20000=exact"
	pairtable seeds "$SEEDS" "Seeds: the fast preset (its exact path) beside scikit-learn on 400-point subsets of every UCI set, subset seeds 1 to 6"
	table "$(inputs "$OUT/bench.txt")" --table bench
} >"$D/tables.md.tmp"
mv "$D/tables.md.tmp" "$D/tables.md"
