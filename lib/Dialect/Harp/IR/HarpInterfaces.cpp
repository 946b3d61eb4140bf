//===- HarpInterfaces.cpp - harp op interfaces ----------------------------===//

#include "harp/Dialect/Harp/IR/HarpInterfaces.h"

#include "harp/Dialect/Harp/IR/HarpInterfaces.cpp.inc"
