/* SPDX-License-Identifier: BSD-3-Clause */
/* list: one intrusive circular doubly linked list for every "object on a list" in Spur. An object
 * embeds a struct list_node per list it can be on; a list is a struct list_node head whose next
 * and prev point at itself when empty. Every operation is O(1) and never allocates. Header only,
 * pure, no I/O.
 *
 * A node that is on no list is kept "unlinked" (next == prev == itself, list_node_init), so
 * list_linked tells whether it is on one and list_del may be called on it again harmlessly. */
#ifndef SPUR_LIST_H
#define SPUR_LIST_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* container_of turns a pointer to member `field` of a `type` back into the `type`. */
#define container_of(ptr, type, field) ((type *)(void *)((char *)(ptr) - offsetof(type, field)))

/* struct list_node is both a list head and the link embedded in each object on the list. */
struct list_node {
    struct list_node *next; /* next node, or the head after the last one */
    struct list_node *prev; /* previous node, or the head before the first one */
};

/* list_node_init makes n an empty list head, or marks an embedded link as on no list. */
static inline void list_node_init(struct list_node *n)
{
    n->next = n;
    n->prev = n;
}

/* list_empty reports whether head has no nodes. */
static inline int list_empty(const struct list_node *head)
{
    return head->next == head;
}

/* list_linked reports whether the embedded link n is on a list (the inverse of list_empty, named
 * for the link's point of view). */
static inline int list_linked(const struct list_node *n)
{
    return n->next != n;
}

/* list_insert_after links n (not on any list) right after pos. */
static inline void list_insert_after(struct list_node *pos, struct list_node *n)
{
    n->prev = pos;
    n->next = pos->next;
    pos->next->prev = n;
    pos->next = n;
}

/* list_push_back appends n (not on any list) at the end of head. */
static inline void list_push_back(struct list_node *head, struct list_node *n)
{
    list_insert_after(head->prev, n);
}

/* list_push_front inserts n (not on any list) at the start of head. */
static inline void list_push_front(struct list_node *head, struct list_node *n)
{
    list_insert_after(head, n);
}

/* list_del unlinks n from its list and leaves it unlinked; a no-op if it is on none. */
static inline void list_del(struct list_node *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
    list_node_init(n);
}

/* list_first returns the first node of head, or NULL if it is empty. */
static inline struct list_node *list_first(const struct list_node *head)
{
    return list_empty(head) ? NULL : head->next;
}

/* list_last returns the last node of head, or NULL if it is empty. */
static inline struct list_node *list_last(const struct list_node *head)
{
    return list_empty(head) ? NULL : head->prev;
}

/* list_next returns the node after n on head, or NULL if n is the last one. */
static inline struct list_node *list_next(const struct list_node *head, const struct list_node *n)
{
    return n->next == head ? NULL : n->next;
}

/* list_rotate moves the first node of head to the end (round-robin); a no-op on 0 or 1 nodes. */
static inline void list_rotate(struct list_node *head)
{
    struct list_node *first = head->next;
    if (first == head || first->next == head)
        return;
    list_del(first);
    list_push_back(head, first);
}

/* list_splice_back moves every node of from, in order, to the end of head and leaves from
 * empty. */
static inline void list_splice_back(struct list_node *head, struct list_node *from)
{
    if (list_empty(from))
        return;
    struct list_node *first = from->next, *last = from->prev;
    first->prev = head->prev;
    head->prev->next = first;
    last->next = head;
    head->prev = last;
    list_node_init(from);
}

/* list_for_each walks the nodes of head in order; the loop body must not unlink `it`. */
#define list_for_each(it, head) for (struct list_node *it = (head)->next; it != (head); it = it->next)

/* list_for_each_safe walks the nodes of head in order; the body may unlink (or free) `it`. */
#define list_for_each_safe(it, tmp, head)                                                        \
    for (struct list_node *it = (head)->next, *tmp = it->next; it != (head); it = tmp, tmp = it->next)

#ifdef __cplusplus
}
#endif
#endif
