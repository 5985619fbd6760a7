// tg-build-train-step rejects non-finite hyperparameter options (the pass
// option path of TRAIN.json's checks; "inf" and "nan" parse as doubles).
// RUN: not tg-opt %s --tg-build-train-step="batch-size=4 seq-len=16 lr=inf" 2>&1 | FileCheck %s --check-prefix=LR
// LR: error: tg-build-train-step: option 'lr' must be finite and >= 0, got INF
// RUN: not tg-opt %s --tg-build-train-step="batch-size=4 seq-len=16 lr=0.001 eps=nan" 2>&1 | FileCheck %s --check-prefix=EPS
// EPS: error: tg-build-train-step: option 'eps' must be finite and > 0, got nan
// RUN: not tg-opt %s --tg-build-train-step="batch-size=4 seq-len=16 lr=0.001 weight-decay=inf" 2>&1 | FileCheck %s --check-prefix=WD
// WD: error: tg-build-train-step: option 'weight-decay' must be finite and >= 0, got INF
// RUN: not tg-opt %s --tg-build-train-step="batch-size=4 seq-len=16 lr=0.001 grad-clip-norm=inf" 2>&1 | FileCheck %s --check-prefix=CLIP
// CLIP: error: tg-build-train-step: option 'grad-clip-norm' must be finite and > 0 (0 disables clipping), got INF
// RUN: not tg-opt %s --tg-build-train-step="batch-size=4 seq-len=16 lr=0.001 beta1=nan" 2>&1 | FileCheck %s --check-prefix=BETA
// BETA: error: tg-build-train-step: option 'beta1' must be in [0, 1), got nan
// RUN: not tg-opt %s --tg-build-train-step="batch-size=4 seq-len=16 lr=0.001 min-lr=nan" 2>&1 | FileCheck %s --check-prefix=MINLR
// MINLR: error: tg-build-train-step: option 'min-lr' must be finite and >= 0, got nan
module {
}
