#include "cumulus/cumulus.h"

namespace cumulus {

const char* Version() { return CUMULUS_VERSION; }

}  // namespace cumulus
