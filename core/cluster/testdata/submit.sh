#!/bin/sh
# Written by flashcore slurm: submits the shards as a job array, then the
# merge to run after every task ended (afterany: even if some failed).
set -eu
cd '/shared/llm run'
mkdir -p logs
array=$(sbatch --parsable array.sbatch)
array=${array%%;*}
merge=$(sbatch --parsable --dependency=afterany:"$array" merge.sbatch)
echo "array job $array (4 task(s)), merge job ${merge%%;*}; merged results: /shared/llm run/merged.json"
