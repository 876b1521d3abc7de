/* The IMDb text pipeline: UTF-8 checking, the Keras-style tokeniser, the
 * vocabulary (ranking, reserved indices, files), sequence encoding, the
 * aclImdb reader, the prepared form and their errors. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "harness.h"
#include "crossbind/data.h"

typedef struct { char toks[32][32]; int n; } token_list;

static void collect(const char *tok, size_t len, void *user)
{
    token_list *l = user;
    if (l->n < 32 && len < 32) {
        memcpy(l->toks[l->n], tok, len);
        l->toks[l->n][len] = 0;
    }
    l->n++;
}

static token_list tokens_of(const char *text)
{
    token_list l = {0};
    char *copy = strdup(text);
    cb_tokenize(copy, strlen(copy), collect, &l);
    free(copy);
    return l;
}

TEST(utf8_validation)
{
    CHECK(cb_utf8_invalid_at("plain ascii", 11) == -1);
    CHECK(cb_utf8_invalid_at("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14) == -1);
    CHECK(cb_utf8_invalid_at("ab\xff", 3) == 2);                /* never valid */
    CHECK(cb_utf8_invalid_at("a\xc3", 2) == 1);                 /* truncated */
    CHECK(cb_utf8_invalid_at("\xc0\xaf", 2) == 0);              /* overlong '/' */
    CHECK(cb_utf8_invalid_at("\xe0\x80\xaf", 3) == 0);          /* overlong, three bytes */
    CHECK(cb_utf8_invalid_at("x\xed\xa0\x80", 4) == 1);         /* surrogate U+D800 */
    CHECK(cb_utf8_invalid_at("\xf4\x90\x80\x80", 4) == 0);      /* above U+10FFFF */
    CHECK(cb_utf8_invalid_at("\xc3\x28", 2) == 0);              /* bad continuation */
}

TEST(tokeniser_follows_keras)
{
    token_list l = tokens_of("Hello, World!  It's\tA <br />GREAT\r\nfilm... 10/10 \xc3\x89t\xc3\xa9 na\xc3\xafve \xc3\x97");
    const char *want[] = {"hello", "world", "it's", "a", "br", "great", "film", "10", "10",
                          "\xc3\xa9t\xc3\xa9", "na\xc3\xafve", "\xc3\x97"};
    CHECK(l.n == 12);
    for (int i = 0; i < 12 && i < l.n; i++) {
        if (strcmp(l.toks[i], want[i])) fprintf(stderr, "  token %d: '%s' want '%s'\n", i, l.toks[i], want[i]);
        CHECK(strcmp(l.toks[i], want[i]) == 0);
    }
    CHECK(tokens_of("").n == 0);
    CHECK(tokens_of(" ,.;  ").n == 0);
}

/* A vocabulary from texts, with num_words small enough to cut. */
static void vocab_of(const char *const *texts, int n, int num_words, int maxlen, cb_vocab *v)
{
    cb_word_counter *c;
    CHECK_OK(cb_word_counter_create(&c));
    for (int i = 0; i < n; i++) {
        char *copy = strdup(texts[i]);
        CHECK_OK(cb_word_counter_add(c, copy, strlen(copy)));
        free(copy);
    }
    CHECK_OK(cb_vocab_from_counts(c, num_words, maxlen, v));
    cb_word_counter_free(c);
}

TEST(vocabulary_ranks_by_count_then_first_appearance)
{
    const char *texts[] = {"b a c", "c d a", "a e"};
    cb_vocab v;
    vocab_of(texts, 3, 7, 5, &v); /* room for 7 - 4 = 3 words */
    CHECK(v.n_words == 3);
    /* a:3, c:2, b:1 (first of the 1-counts), d:1, e:1 */
    CHECK(v.n_words == 3 && !strcmp(v.words[0], "a") && !strcmp(v.words[1], "c") && !strcmp(v.words[2], "b"));
    CHECK(cb_vocab_lookup(&v, "a", 1) == 4 && cb_vocab_lookup(&v, "c", 1) == 5 && cb_vocab_lookup(&v, "b", 1) == 6);
    CHECK(cb_vocab_lookup(&v, "d", 1) == CB_TOK_OOV && cb_vocab_lookup(&v, "zz", 2) == CB_TOK_OOV);
    /* [start, words...], pre-padded; truncated at the front when longer */
    float seq[5];
    char t1[] = "A b ZZ";
    CHECK_OK(cb_vocab_encode(&v, t1, strlen(t1), seq));
    const float want1[5] = {0, 1, 4, 6, 2};
    CHECK(memcmp(seq, want1, sizeof seq) == 0);
    char t2[] = "c c a b d a";
    CHECK_OK(cb_vocab_encode(&v, t2, strlen(t2), seq));
    const float want2[5] = {5, 4, 6, 2, 4};
    CHECK(memcmp(seq, want2, sizeof seq) == 0);
    char t3[] = "";
    CHECK_OK(cb_vocab_encode(&v, t3, 0, seq));
    const float want3[5] = {0, 0, 0, 0, 1};
    CHECK(memcmp(seq, want3, sizeof seq) == 0);
    cb_vocab_free(&v);
}

/* A NUL byte (valid UTF-8, so a review may hold one) separates words like
 * a space: a word holding it would be stored cut short, and looking up such
 * a token once read past the end of the shorter stored word. */
TEST(nul_bytes_separate_words)
{
    static const char text[] = "w w\0x x\0\0w";
    cb_word_counter *c;
    CHECK_OK(cb_word_counter_create(&c));
    char *copy = malloc(sizeof text);
    memcpy(copy, text, sizeof text);
    CHECK_OK(cb_word_counter_add(c, copy, sizeof text - 1));
    free(copy);
    cb_vocab v;
    CHECK_OK(cb_vocab_from_counts(c, 8, 4, &v));
    cb_word_counter_free(c);
    /* w:3, x:2 */
    CHECK(v.n_words == 2 && !strcmp(v.words[0], "w") && !strcmp(v.words[1], "x"));
    CHECK(cb_vocab_lookup(&v, "x", 1) == 5);
    CHECK(cb_vocab_lookup(&v, "w\0", 2) == CB_TOK_OOV); /* a caller's token with a NUL is no stored word */
    char t[] = "x\0w";
    float seq[4];
    CHECK_OK(cb_vocab_encode(&v, t, 3, seq));
    const float want[4] = {0, 1, 5, 4};
    CHECK(memcmp(seq, want, sizeof seq) == 0);
    cb_vocab_free(&v);
}

static void write_text(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    fwrite(text, 1, len, f);
    fclose(f);
}

/* A vocabulary line holding a NUL byte was stored as the word before it
 * (here the empty word), which saving then wrote as a line no reader takes. */
TEST(vocabulary_file_refuses_nul_in_a_word)
{
    static const char text[] = "crossbind-vocab 1 num_words=8 maxlen=4 index_from=3\nthe\n\0\0x\nfilm\n";
    const char *path = test_tmp("vocab-nul.txt");
    write_text(path, text, sizeof text - 1);
    cb_vocab v;
    CHECK(cb_vocab_load(path, &v) == CB_ERR_FORMAT && strstr(cb_last_error(), "line 3 is not a word"));
}

/* num_words is a bound on the file, not a size: a header claiming 2^24
 * words over two words once allocated 128 MiB of word pointers before
 * reading any. The list now grows with the words read. */
TEST(vocabulary_file_allocates_for_the_words_it_holds)
{
    static const char text[] = "crossbind-vocab 1 num_words=16777216 maxlen=4 index_from=3\nthe\nfilm\n";
    const char *path = test_tmp("vocab-claims-huge.txt");
    write_text(path, text, sizeof text - 1);
    cb_vocab v;
    CHECK_OK(cb_vocab_load(path, &v));
    CHECK(v.num_words == 16777216 && v.n_words == 2 && cb_vocab_lookup(&v, "film", 4) == 5);
    CHECK(v.words && malloc_usable_size(v.words) < 4096);
    cb_vocab_free(&v);
}

/* Through a stream (memory here): what is written reads back the same. */
TEST(vocabulary_streams_round_trip)
{
    const char *words[] = {"one two two"};
    cb_vocab a, b;
    vocab_of(words, 1, 100, 8, &a);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK_OK(cb_vocab_write(&a, f, "memory"));
    fclose(f);
    f = fmemopen(buf, len, "rb");
    CHECK_OK(cb_vocab_read(f, "memory", &b));
    fclose(f);
    CHECK(cb_vocab_equal(&a, &b));
    free(buf);
    cb_vocab_free(&a);
    cb_vocab_free(&b);
}

TEST(vocabulary_files_round_trip_and_refuse_corruption)
{
    const char *texts[] = {"one two two three three three"};
    cb_vocab v, w;
    vocab_of(texts, 1, 10000, 300, &v);
    const char *path = test_tmp("vocab.txt");
    CHECK_OK(cb_vocab_save(&v, path));
    CHECK_OK(cb_vocab_load(path, &w));
    CHECK(cb_vocab_equal(&v, &w) && cb_vocab_lookup(&w, "three", 5) == 4);
    cb_vocab_free(&w);
    static const char *const bad[] = {
        "not a vocabulary\nword\n",
        "crossbind-vocab 2 num_words=10000 maxlen=300 index_from=3\nword\n",
        "crossbind-vocab 1 num_words=10000 maxlen=300 index_from=1\nword\n",
        "crossbind-vocab 1 num_words=10000 maxlen=300 index_from=3\nword\nword\n",
        "crossbind-vocab 1 num_words=10000 maxlen=300 index_from=3\nword\ntrunc",
        "crossbind-vocab 1 num_words=10000 maxlen=300 index_from=3\ntwo words\n",
        "crossbind-vocab 1 num_words=6 maxlen=300 index_from=3\na\nb\nc\n",
        "crossbind-vocab 1 num_words=10000 maxlen=300 index_from=3\n\xff\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_text(path, bad[i], strlen(bad[i]));
        cb_status s = cb_vocab_load(path, &w);
        if (s == CB_OK) fprintf(stderr, "  bad vocabulary %zu was accepted\n", i);
        CHECK(s == CB_ERR_FORMAT);
    }
    CHECK(cb_vocab_load(test_tmp("no-such-vocab"), &w) == CB_ERR_IO);
    cb_vocab_free(&v);
}

/* A small aclImdb tree: ids interleave classes; one review per file. */
static const char *make_acl(const char *name)
{
    const char *root = test_tmp(name);
    static char dir[512];
    snprintf(dir, sizeof dir, "%s", root);
    static const char *const sub[] = {"", "/train", "/train/pos", "/train/neg", "/test", "/test/pos", "/test/neg"};
    char p[700];
    for (int i = 0; i < 7; i++) {
        snprintf(p, sizeof p, "%s%s", dir, sub[i]);
        mkdir(p, 0777);
    }
    static const struct { const char *file, *text; } files[] = {
        {"train/pos/0_10.txt", "Great great film"}, {"train/neg/0_1.txt", "awful film"},
        {"train/pos/1_8.txt", "great acting"},      {"train/neg/1_3.txt", "Awful, awful plot."},
        {"train/neg/10_2.txt", "boring"},           {"test/pos/0_9.txt", "great plot"},
        {"test/neg/0_2.txt", "boring awful unknownword"},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i].file);
        write_text(p, files[i].text, strlen(files[i].text));
    }
    return dir;
}

TEST(aclimdb_reader_orders_and_encodes)
{
    const char *dir = make_acl("acl-ok");
    cb_vocab v;
    CHECK_OK(cb_imdb_vocab_build(dir, 10000, 4, &v));
    /* counts: awful 3, great 3 (great first), film 2, ... */
    CHECK(v.n_words >= 3 && !strcmp(v.words[0], "great") && !strcmp(v.words[1], "awful") &&
          !strcmp(v.words[2], "film"));
    cb_dataset tr, te;
    CHECK_OK(cb_imdb_load(dir, 1, 0, &v, &tr));
    CHECK(tr.n == 5 && tr.w == 4 && tr.c == 1 && tr.h == 1);
    /* order: 0 pos, 0 neg, 1 pos, 1 neg, 10 neg */
    const float labels[5] = {1, 0, 1, 0, 0};
    CHECK(tr.n == 5 && memcmp(tr.y, labels, sizeof labels) == 0);
    const float first[4] = {1, 4, 4, 6}; /* start, great, great, film */
    CHECK(memcmp(tr.x, first, sizeof first) == 0);
    CHECK_OK(cb_imdb_load(dir, 0, 0, &v, &te));
    const float last[4] = {1, 0 + cb_vocab_lookup(&v, "boring", 6), 5, 2}; /* ... unknownword is OOV */
    CHECK(te.n == 2 && memcmp(te.x + 4, last, sizeof last) == 0);
    cb_dataset_free(&te);
    CHECK_OK(cb_imdb_load(dir, 1, 2, &v, &te)); /* limit */
    CHECK(te.n == 2);
    cb_dataset_free(&te);
    /* the prepared form gives the same tensors; another vocabulary is refused */
    const char *prep = test_tmp("acl-prepared");
    mkdir(prep, 0777);
    int64_t ntr, nte;
    CHECK_OK(cb_imdb_prepare(dir, prep, NULL, 10000, 4, &ntr, &nte));
    CHECK(ntr == 5 && nte == 2);
    cb_dataset pr;
    cb_vocab used;
    CHECK_OK(cb_text_dataset_load(prep, 1, 0, &v, &used, &pr));
    CHECK(pr.n == tr.n && memcmp(pr.x, tr.x, (size_t)tr.n * 4 * sizeof(float)) == 0 &&
          memcmp(pr.y, tr.y, (size_t)tr.n * sizeof(float)) == 0 && cb_vocab_equal(&used, &v));
    cb_dataset_free(&pr);
    cb_vocab_free(&used);
    cb_vocab other;
    const char *texts[] = {"different words"};
    vocab_of(texts, 1, 10000, 4, &other);
    CHECK(cb_text_dataset_load(prep, 1, 0, &other, NULL, &pr) == CB_ERR_FORMAT);
    CHECK(strstr(cb_last_error(), "another vocabulary") != NULL);
    cb_vocab_free(&other);
    cb_dataset_free(&tr);
    cb_vocab_free(&v);
}

TEST(aclimdb_reader_refuses_bad_reviews)
{
    const char *dir = make_acl("acl-bad");
    char p[700];
    cb_vocab v;
    cb_dataset d;
    snprintf(p, sizeof p, "%s/train/pos/2_9.txt", dir);
    write_text(p, "", 0);
    CHECK(cb_imdb_vocab_build(dir, 10000, 300, &v) == CB_ERR_FORMAT);
    CHECK(strstr(cb_last_error(), "empty review") && strstr(cb_last_error(), "2_9.txt"));
    write_text(p, "caf\xe9 latin-1", 12);
    CHECK(cb_imdb_vocab_build(dir, 10000, 300, &v) == CB_ERR_FORMAT);
    CHECK(strstr(cb_last_error(), "not valid UTF-8 (byte 3)") != NULL);
    remove(p);
    snprintf(p, sizeof p, "%s/train/neg/3_1.txt", dir);
    mkdir(p, 0777); /* a directory where a review should be: unreadable */
    CHECK(cb_imdb_vocab_build(dir, 10000, 300, &v) != CB_OK);
    rmdir(p);
    snprintf(p, sizeof p, "%s/test/neg", dir);
    char cmd[800];
    snprintf(cmd, sizeof cmd, "rm -rf %s", p);
    CHECK(system(cmd) == 0);
    CHECK_OK(cb_imdb_vocab_build(dir, 10000, 300, &v));
    CHECK(cb_imdb_load(dir, 0, 0, &v, &d) == CB_ERR_IO);
    CHECK(strstr(cb_last_error(), "test/neg") != NULL);
    cb_vocab_free(&v);
    CHECK(cb_text_dataset_load(test_tmp("no-such-acl"), 1, 0, NULL, NULL, &d) == CB_ERR_IO);
}
