#!/usr/bin/env bash
# Fixed-seed runs, one per algorithm family, whose metrics.csv must stay byte-identical across a
# refactor: run before and after, compare the sha256sum lines (issue "One place for each idea").
# Usage: bash scripts/same_metrics.sh OUT_DIR [overrides...]   (one thread, so the sums do not depend on the machine's cores)
set -euo pipefail
out=${1:?usage: scripts/same_metrics.sh OUT_DIR}
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
common=(progress=false plots=false seed=3 "${@:2}")   # extra overrides after OUT_DIR apply to every run
img=(dataset=fashion_mnist 'dataset.distributions=[{rotation: 0}]' model=lenet dataset.train_size=3000 partition=cluster_dirichlet partition.num_clients=12
     num_clusters=3 train.steps=4 train.batch_size=16 train.lr=0.01 rounds=6 eval_every=2)
fedcluster "${common[@]}" algorithm=fedsoft rounds=8 hydra.run.dir="$out/fedsoft"
fedcluster "${common[@]}" algorithm=fedem rounds=8 hydra.run.dir="$out/fedem"
fedcluster "${common[@]}" "${img[@]}" algorithm=ifca hydra.run.dir="$out/ifca"
fedcluster "${common[@]}" "${img[@]}" algorithm=ifca_cam algorithm.warmup_rounds=2 hydra.run.dir="$out/ifca_cam"
fedcluster "${common[@]}" "${img[@]}" algorithm=fesem_cam hydra.run.dir="$out/fesem_cam"
fedcluster "${common[@]}" "${img[@]}" algorithm=clove hydra.run.dir="$out/clove"
fedcluster "${common[@]}" "${img[@]}" algorithm=clove algorithm.averaging=gradient hydra.run.dir="$out/clove_gradient"
fedcluster "${common[@]}" "${img[@]}" algorithm=cfl algorithm.split_after_round=2 algorithm.eps1=10 algorithm.eps2=0 hydra.run.dir="$out/cfl"
fedcluster "${common[@]}" "${img[@]}" algorithm=ifca engine=batched hydra.run.dir="$out/ifca_batched"
fedcluster "${common[@]}" "${img[@]}" algorithm=fedprox hydra.run.dir="$out/fedprox"
fedcluster "${common[@]}" "${img[@]}" algorithm=local hydra.run.dir="$out/local"
fedcluster "${common[@]}" "${img[@]}" algorithm=fedpac hydra.run.dir="$out/fedpac"
fedcluster "${common[@]}" "${img[@]}" algorithm=fedproto hydra.run.dir="$out/fedproto"
fedcluster "${common[@]}" "${img[@]}" algorithm=perfedavg hydra.run.dir="$out/perfedavg"
fedcluster "${common[@]}" "${img[@]}" algorithm=fedproto engine=batched hydra.run.dir="$out/fedproto_batched"
fedcluster "${common[@]}" "${img[@]}" algorithm=fedavg engine=sequential hydra.run.dir="$out/fedavg_sequential"
fedcluster "${common[@]}" "${img[@]}" algorithm=fedala hydra.run.dir="$out/fedala"
fedcluster "${common[@]}" "${img[@]}" algorithm=fedem hydra.run.dir="$out/fedem_img"
fedcluster "${common[@]}" "${img[@]}" algorithm=fesem hydra.run.dir="$out/fesem"
fedcluster "${common[@]}" "${img[@]}" algorithm=flexcfl hydra.run.dir="$out/flexcfl"
fedcluster "${common[@]}" "${img[@]}" algorithm=pacfl hydra.run.dir="$out/pacfl"
fedcluster "${common[@]}" "${img[@]}" algorithm=fedavg_plus algorithm.num_clusters=2 hydra.run.dir="$out/fedavg_plus"
# several chunks per round (each chunk's rows folded, or gathered, before the next trains)
fedcluster "${common[@]}" "${img[@]}" algorithm=fedavg hardware.chunk=5 hydra.run.dir="$out/fedavg_chunked"
fedcluster "${common[@]}" "${img[@]}" algorithm=cfl algorithm.split_after_round=2 algorithm.eps1=10 algorithm.eps2=0 hardware.chunk=5 hydra.run.dir="$out/cfl_chunked"
fedcluster "${common[@]}" "${img[@]}" algorithm=ifca_cam algorithm.warmup_rounds=2 hardware.chunk=5 hydra.run.dir="$out/ifca_cam_chunked"
fedcluster "${common[@]}" "${img[@]}" algorithm=fesem_cam hardware.chunk=5 hydra.run.dir="$out/fesem_cam_chunked"
fedcluster "${common[@]}" "${img[@]}" algorithm=fedavg_plus algorithm.num_clusters=2 hardware.chunk=5 hydra.run.dir="$out/fedavg_plus_chunked"
skew=(dataset=fashion_mnist 'dataset.distributions=[{rotation: 0}]' dataset.train_size=4000 model=lenet partition.num_clients=8 partition.samples_per_client=100
      partition.test_samples_per_client=20 train.steps=4 train.batch_size=16 train.lr=0.01 rounds=3 eval_every=1)
fedcluster "${common[@]}" "${skew[@]}" partition=feature_skew num_clusters=4 algorithm=ifca hydra.run.dir="$out/feature_skew"
fedcluster "${common[@]}" "${skew[@]}" partition=concept_shift num_clusters=4 algorithm=ifca hydra.run.dir="$out/concept_shift"
fedcluster "${common[@]}" "${skew[@]}" partition=label_skew2 num_clusters=4 algorithm=clove hydra.run.dir="$out/label_skew2"
cd "$out" && sha256sum */metrics.csv
