/* strmap.h — a string -> int hash map (open addressing, keys copied), for
 * passes that would otherwise compare every name with every other.
 *
 *   strmap *m = strmap_new();                 // strmap_free releases it and its keys
 *   strmap_put(m, "conv1", 3);
 *   const int *v = strmap_get(m, "conv1");    // NULL when absent; valid until the next put
 */
#ifndef OC_STRMAP_H
#define OC_STRMAP_H

#include <stddef.h>

typedef struct strmap strmap;

strmap *strmap_new(void);
void strmap_free(strmap *m);
/* Sets key's value (adding the key when absent). */
void strmap_put(strmap *m, const char *key, int value);
/* The value of key, or NULL; the pointer is valid until the next strmap_put. */
int *strmap_get(const strmap *m, const char *key);
size_t strmap_count(const strmap *m);

#endif
