/* cmd-remote.c — placeholder while being written. */
#include "cli.h"
