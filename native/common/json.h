/* One JSON object per line on stdout: the only output format of the harness.
 * Usage: json_begin(); json_str("type", "result"); json_int("bytes", 8); json_end();
 * Not reentrant (one line at a time, written by rank 0 only). */
#ifndef CONTEND_JSON_H
#define CONTEND_JSON_H

#include <stdint.h>

void json_begin(void);
void json_str(const char *key, const char *value);
void json_int(const char *key, int64_t value);
void json_num(const char *key, double value);
void json_bool(const char *key, int value);
/* A list value: json_list_begin("hosts"); json_item_str(..)...; json_list_end(); */
void json_list_begin(const char *key);
void json_item_str(const char *value);
void json_item_int(int64_t value);
void json_list_end(void);
/* Close the object, print the line and flush (a reader sees each line as soon as it is done). */
void json_end(void);

#endif
