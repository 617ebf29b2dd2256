// The AMP's datapath as the ipu.ampw and ipu.amp instructions drive it: loading a phase of
// weights, and one step of multiply-accumulate that writes the results after the last phase,
// on the C++ model or on the AMP lane RTL (datapaths.h).
#pragma once

#include <cstdint>

#include "amp.h"
#include "datapaths.h"

namespace ipu::iss {

// Loads one phase of weights (row-major, f16 or f32 per the mode) as f32 values.
void load_amp_weights(AmpUnit& amp, unsigned phase, const uint8_t* src);

// One ipu.amp: multiply-accumulate the input vector at `in`; after the last phase write the
// results at `out` (NaN results canonical, as every tile FP result) and start over. With `lanes`
// the arithmetic runs on the AMP lane RTL.
void amp_step(AmpUnit& amp, const uint8_t* in, uint8_t* out, AmpDatapath* lanes);

}  // namespace ipu::iss
