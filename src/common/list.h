/* SPDX-License-Identifier: MIT */
/* The one intrusive doubly linked list of the tree.  A struct that lives
 * in a list embeds a struct rw_list_node (one per list it can be in at the
 * same time) and gets back to itself with rw_list_entry.  Ends are NULL,
 * not a sentinel, and the list keeps its length.  Everything is inline: the
 * railset's hot path moves every slice through two or three of them per
 * transfer.  No locking: the owner of the list serialises its users. */
#ifndef RW_COMMON_LIST_H
#define RW_COMMON_LIST_H

#include <stddef.h>

struct rw_list_node {
    struct rw_list_node *prev, *next;
};

struct rw_list {
    struct rw_list_node *head, *tail;
    size_t count;
};

/* The struct of `type` whose `member` is node n (n must not be NULL). */
#define rw_list_entry(n, type, member) ((type *)(void *)((char *)(n) - offsetof(type, member)))
/* Like rw_list_entry, NULL for NULL. */
#define rw_list_entry_or_null(n, type, member) ((n) ? rw_list_entry((n), type, member) : NULL)
/* The first / next entry, or NULL. */
#define rw_list_first(l, type, member) rw_list_entry_or_null((l)->head, type, member)
#define rw_list_next(e, type, member) rw_list_entry_or_null((e)->member.next, type, member)
/* Walks the entries of l in order: e is a `type *`; do not remove e inside
 * (use rw_list_next first, then remove). */
#define rw_list_for_each(e, l, type, member)                                                      \
    for (type *e = rw_list_first((l), type, member); e; e = rw_list_next(e, type, member))

/* Appends n at the tail of l. */
static inline void rw_list_push_tail(struct rw_list *l, struct rw_list_node *n)
{
    n->next = NULL;
    n->prev = l->tail;
    if (l->tail)
        l->tail->next = n;
    else
        l->head = n;
    l->tail = n;
    l->count++;
}

/* Inserts n before the head of l. */
static inline void rw_list_push_head(struct rw_list *l, struct rw_list_node *n)
{
    n->prev = NULL;
    n->next = l->head;
    if (l->head)
        l->head->prev = n;
    else
        l->tail = n;
    l->head = n;
    l->count++;
}

/* Unlinks n, which is in l.  n's own links are left as they were (stale):
 * it is linked again (push, or the railset's transfer pool) before anyone
 * follows them, and clearing them costs the railset's hot path two stores
 * per list a slice or transfer leaves. */
static inline void rw_list_remove(struct rw_list *l, struct rw_list_node *n)
{
    if (n->prev)
        n->prev->next = n->next;
    else
        l->head = n->next;
    if (n->next)
        n->next->prev = n->prev;
    else
        l->tail = n->prev;
    l->count--;
}

/* Moves every node of src, in order, before the head of l; empties src. */
static inline void rw_list_prepend(struct rw_list *l, struct rw_list *src)
{
    if (!src->head)
        return;
    src->tail->next = l->head;
    if (l->head)
        l->head->prev = src->tail;
    else
        l->tail = src->tail;
    l->head = src->head;
    l->count += src->count;
    src->head = src->tail = NULL;
    src->count = 0;
}

#endif
