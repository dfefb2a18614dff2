/*
 * replay_main.c - runs a fuzz target's entry point over files without
 * libFuzzer, so regression inputs and corpora replay in every build (plain,
 * ASan) as ordinary tests.
 *
 * Owns: the command line `replay_<target> FILE|DIR...`: each file (or each
 * regular file of a directory, in name order) is read whole and handed to
 * LLVMFuzzerTestOneInput once. A target that finds a problem aborts, which
 * fails the run; otherwise prints "N inputs" and exits 0. Unreadable
 * arguments: one line on stderr, exit 2.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: %s: cannot open\n", path);
        return -1;
    }
    size_t cap = 1 << 16, len = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            uint8_t *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "replay: %s: out of memory\n", path);
        return -1;
    }
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        printf("usage: %s FILE|DIR...\nFeeds each input once to the fuzz target; exit 0 = no finding.\n",
               argv[0]);
        return argc < 2 ? 2 : 0;
    }
    unsigned long inputs = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s: no such file or directory\n", argv[i]);
            return 2;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (replay_file(argv[i]) != 0)
                return 2;
            inputs++;
            continue;
        }
        struct dirent **names;
        int n = scandir(argv[i], &names, NULL, alphasort);
        if (n < 0) {
            fprintf(stderr, "replay: %s: cannot read directory\n", argv[i]);
            return 2;
        }
        for (int k = 0; k < n; k++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], names[k]->d_name);
            if (names[k]->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
                if (replay_file(path) != 0)
                    return 2;
                inputs++;
            }
            free(names[k]);
        }
        free(names);
    }
    printf("%lu inputs\n", inputs);
    return 0;
}
