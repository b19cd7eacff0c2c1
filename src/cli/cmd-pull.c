/* cmd-pull.c — placeholder while being written. */
#include "cli.h"
