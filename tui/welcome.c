/* What the opening screen says about tl-mini-instruct. The intro follows the model card and
 * tools/corpus/gen.py (the domains it was taught); each example is a question in a domain and
 * phrasing it was trained on, so the shipped model answers it — tests/welcome checks that, and
 * a retrained model that loses one fails there rather than on a student's screen. */
#include "welcome.h"

#include <string.h>

static const char *const intro_en =
    "tl-mini-instruct is a tiny model that tokenloop trained itself, on generated English and "
    "Vietnamese conversations.\n"
    "It was taught the capital of every country, colours and colour mixing, animals (sounds, legs, "
    "babies), opposites, spelling and letter counts, the next number, the small sums it was shown "
    "and a few how-to answers; it also counts, lists and tells short stories, which the 20-token "
    "budget cuts.\n"
    "Anything else it gets wrong: it is for watching inference, not for facts.";

static const char *const intro_vi =
    "tl-mini-instruct là một mô hình rất nhỏ do chính tokenloop huấn luyện, trên các cuộc trò "
    "chuyện tiếng Anh và tiếng Việt được sinh tự động.\n"
    "Nó được dạy thủ đô của mọi quốc gia, màu sắc và cách pha màu, con vật (tiếng kêu, số chân, "
    "con non), từ trái nghĩa, đánh vần và đếm chữ cái, số liền sau, những phép cộng trừ nhỏ đã "
    "được học và vài câu hướng dẫn; nó còn đếm, liệt kê và kể chuyện ngắn, bị ngân sách 20 token "
    "cắt ngang.\n"
    "Ngoài những điều đó nó trả lời sai: nó dùng để quan sát quá trình suy luận, không phải để "
    "tra cứu.";

typedef struct example {
    const char *q_en, *a_en, *q_vi, *a_vi;
} example;

/* Australia: the largest city is not the capital, a classic; arithmetic only on a pair it was
 * shown (it memorised sums, it did not learn to add: see the model card). */
static const example examples[] = {
    { "Which city is the capital of Australia?", "Canberra", "Thủ đô của Việt Nam là gì?", "Hà Nội" },
    { "What colour do you get when you mix blue and yellow?", "green", "Quả chuối màu gì?", "vàng" },
    { "What sound does a cow make?", "moo", "Con bò có mấy chân?", "bốn" },
    { "How many legs does a spider have?", "eight", "Con nhện có bao nhiêu chân?", "tám" },
    { "What is the opposite of hot?", "cold", "Từ trái nghĩa với \"nóng\" là gì?", "lạnh" },
    { "How do you spell \"cat\"?", "C-A-T", "2 cộng 3 bằng mấy?", "5" },
    { "What number comes after 41?", "42", "Số nào đứng sau số 41?", "42" },
    { "How do I make tea?", "water", "Làm sao để pha trà?", "nước" },
};

#define N_EXAMPLES ((int)(sizeof examples / sizeof examples[0]))

static int is_vi(const char *lang)
{
    return lang && !strcmp(lang, "vi");
}

static const example *at(int i)
{
    i %= N_EXAMPLES;
    return &examples[i < 0 ? i + N_EXAMPLES : i];
}

const char *Welcome_intro(const char *lang)
{
    return is_vi(lang) ? intro_vi : intro_en;
}

int Welcome_count(void)
{
    return N_EXAMPLES;
}

const char *Welcome_example(int i, const char *lang)
{
    return is_vi(lang) ? at(i)->q_vi : at(i)->q_en;
}

const char *Welcome_expect(int i, const char *lang)
{
    return is_vi(lang) ? at(i)->a_vi : at(i)->a_en;
}
