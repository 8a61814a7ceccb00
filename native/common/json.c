#include "json.h"

#include <math.h>
#include <stdio.h>

static int first_field;
static int first_item;

static void separator(int *first)
{
    if (!*first)
        putchar(',');
    *first = 0;
}

static void quoted(const char *text)
{
    putchar('"');
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        if (*c == '"' || *c == '\\')
            printf("\\%c", *c);
        else if (*c == '\n')
            fputs("\\n", stdout);
        else if (*c == '\t')
            fputs("\\t", stdout);
        else if (*c < 0x20)
            printf("\\u%04x", *c);
        else
            putchar(*c);
    }
    putchar('"');
}

static void key(const char *name)
{
    separator(&first_field);
    quoted(name);
    putchar(':');
}

void json_begin(void)
{
    first_field = 1;
    putchar('{');
}

void json_str(const char *name, const char *value)
{
    key(name);
    quoted(value);
}

void json_int(const char *name, int64_t value)
{
    key(name);
    printf("%lld", (long long)value);
}

void json_num(const char *name, double value)
{
    key(name);
    if (isfinite(value))
        printf("%.17g", value);
    else
        fputs("null", stdout); /* JSON has no inf/nan */
}

void json_bool(const char *name, int value)
{
    key(name);
    fputs(value ? "true" : "false", stdout);
}

void json_list_begin(const char *name)
{
    key(name);
    putchar('[');
    first_item = 1;
}

void json_item_str(const char *value)
{
    separator(&first_item);
    quoted(value);
}

void json_item_int(int64_t value)
{
    separator(&first_item);
    printf("%lld", (long long)value);
}

void json_list_end(void)
{
    putchar(']');
}

void json_end(void)
{
    fputs("}\n", stdout);
    fflush(stdout);
}
