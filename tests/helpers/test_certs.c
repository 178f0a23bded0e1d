/* Writes the certificates of the TLS tests (test_certs_set.h) into the
 * existing directory given.  Usage: test_certs DIR */
#include <stdio.h>

#include "test_certs_set.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_certs DIR\n");
        return 2;
    }
    return test_certs_write(argv[1]) == 0 ? 0 : 1;
}
