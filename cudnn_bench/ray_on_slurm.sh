#!/usr/bin/env bash
# collect --ray on a Slurm allocation: a Ray head on the first node, a Ray worker on every
# other node (each with the GPUs Slurm gave it), then `python -m cudnn_bench collect --ray` on
# the head with the arguments given here; the Ray processes stop with the script.
#
#   sbatch --nodes=4 --gpus-per-node=8 --ntasks-per-node=1 --cpus-per-task=16 --time=2:00:00 \
#       cudnn_bench/ray_on_slurm.sh --suite seer_grid --out /shared/seer/data
#
# Run it from the repository root (or with seer installed) on storage every node sees: the
# shard stores go to OUT/shards. Settings from the environment: PYTHON (default python3),
# RAY_PORT (default 6379), RAY_START_ARGS (more `ray start` options, e.g. --num-cpus 8),
# RAY_WAIT_S (how long to wait for the nodes to join, default 120). The cluster uses Ray's token
# authentication with a token made for the job (RAY_AUTH_TOKEN, or yours if it is set), which
# srun passes to every node with the rest of the environment.
#
#SBATCH --job-name=seer-collect
#SBATCH --ntasks-per-node=1
#SBATCH --exclusive
set -euo pipefail

: "${SLURM_JOB_NODELIST:?not inside a Slurm allocation (run it with sbatch)}"
PY=${PYTHON:-python3}
PORT=${RAY_PORT:-6379}
WAIT=${RAY_WAIT_S:-120}
read -r -a EXTRA <<< "${RAY_START_ARGS:-}"
export RAY_AUTH_MODE=token
RAY_AUTH_TOKEN=${RAY_AUTH_TOKEN:-$("$PY" -c "import secrets; print(secrets.token_hex(32))")}
export RAY_AUTH_TOKEN
mapfile -t NODES < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
HEAD=${NODES[0]}
IP=$(srun --nodes=1 --ntasks=1 -w "$HEAD" hostname --ip-address | awk '{print $1}')
ADDRESS="$IP:$PORT"

PIDS=()
CURRENT="${RAY_TMPDIR:-/tmp}/ray/ray_current_cluster"  # where `ray start --head` names its cluster
stop() {  # end the Ray processes of this job, and the head's note of them (a later ray.init would try it)
    [ ${#PIDS[@]} -eq 0 ] || kill "${PIDS[@]}" 2>/dev/null || true
    wait 2>/dev/null || true
    case "$(cat "$CURRENT" 2>/dev/null)" in *":$PORT") rm -f "$CURRENT" ;; esac  # Ray may name another IP
}
trap stop EXIT

echo "ray_on_slurm: head $HEAD ($ADDRESS), ${#NODES[@]} nodes" >&2
srun --nodes=1 --ntasks=1 -w "$HEAD" ray start --head --node-ip-address="$IP" --port="$PORT" --block "${EXTRA[@]}" &
PIDS+=($!)
for ((t = 0; ; t++)); do  # the head listens before the workers are started
    (echo > "/dev/tcp/$IP/$PORT") 2>/dev/null && break
    [ "$t" -lt "$WAIT" ] || { echo "ray_on_slurm: the Ray head on $HEAD did not start in ${WAIT}s" >&2; exit 2; }
    sleep 1
done
for node in "${NODES[@]:1}"; do
    srun --nodes=1 --ntasks=1 -w "$node" ray start --address="$ADDRESS" --block "${EXTRA[@]}" &
    PIDS+=($!)
done
for ((t = 0; ; t++)); do  # every node joined
    joined=$("$PY" -c "import ray; ray.init(address='$ADDRESS', logging_level='ERROR'); print(len([n for n in ray.nodes() if n['Alive']]))" 2>/dev/null || echo 0)
    [ "$joined" -ge "${#NODES[@]}" ] && break
    [ "$t" -lt "$WAIT" ] || { echo "ray_on_slurm: $joined of ${#NODES[@]} nodes joined in ${WAIT}s" >&2; exit 2; }
    sleep 1
done
"$PY" -m cudnn_bench collect --ray "$ADDRESS" "$@"
