// The reference of kloop's calibration op: the same kernels as calibrate.cu under the *_ref
// entry names (the gate checks the calibration kernels ran completely; see op.toml).
#define KLOOP_CALIBRATE_ENTRY(name) name##_ref
#include "calibrate.cu"
