#!/usr/bin/env bash
# The Keras history docs/validation.md bisects: a clone of keras-team/keras whose branch
# `planted-history` replays the 25 first-parent commits v3.15.0~25..v3.15.0 (none touches
# BatchNormalization) onto v3.15.0~25, the 13th also adding one reduction over the input to
# BatchNormalization.call. v3.15.0 itself is the same history without the plant.
#   scripts/plant_keras_history.sh KERAS_SOURCE DEST
# KERAS_SOURCE: any clone or mirror of keras-team/keras with the v3.15.0 tag.
set -euo pipefail
src=${1:?usage: plant_keras_history.sh KERAS_SOURCE DEST}
dest=${2:?usage: plant_keras_history.sh KERAS_SOURCE DEST}
bn=keras/src/layers/normalization/batch_normalization.py

git clone -q "$src" "$dest"
cd "$dest"
git config user.email kmicro@localhost
git config user.name kmicro
git checkout -q -b planted-history v3.15.0~25
n=0
for commit in $(git rev-list --first-parent --reverse v3.15.0~25..v3.15.0); do
  n=$((n + 1))
  git cherry-pick --allow-empty -x "$commit" >/dev/null
  if [ "$n" -eq 13 ]; then
    grep -q '^        return ops.cast(outputs, self.compute_dtype)$' "$bn"
    sed -i 's/^        return ops.cast(outputs, self.compute_dtype)$/        outputs = outputs + ops.mean(inputs) * 0.0  # planted\n&/' "$bn"
    git commit -q -a --amend --no-edit
  fi
done
echo "planted: $(git rev-parse --short=10 planted-history~12) (commit 13 of $n)"
