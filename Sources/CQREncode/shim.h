#ifndef CQRENCODE_SHIM_H
#define CQRENCODE_SHIM_H
#include <qrencode.h>
#endif
