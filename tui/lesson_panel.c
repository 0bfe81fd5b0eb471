/* The lessons panel: the list, or the current step's narration, wrapped. Drawn over the lower
 * part of the screen so the panes the lesson talks about stay visible. */
#include <string.h>

#include "format.h"
#include "ui.h"

void LessonPanel_draw(WINDOW *w, tl_rect r, tl_ui *ui)
{
    if (r.h < 3 || r.w < 10)
        return;
    for (int y = 0; y < r.h; y++)
        Draw_fill(w, r.y + y, r.x, r.w, A_NORMAL);
    Draw_box(w, r, "Lessons (l)", 1);
    tl_rect in = Draw_inner(r);
    const char *t = ui->lesson_text ? ui->lesson_text : "no lessons available";
    int y = in.y;
    int cols = in.w - 2;
    while (*t && y < in.y + in.h) {
        const char *nl = strchr(t, '\n');
        size_t len = nl ? (size_t)(nl - t) : strlen(t);
        size_t i = 0;
        if (len == 0)
            y++;
        while (i < len && y < in.y + in.h) {
            int used;
            size_t n = Format_prefixFitting(t + i, len - i, cols, &used);
            /* break at the last space when the line goes on */
            if (i + n < len) {
                size_t k = n;
                while (k > 0 && t[i + k - 1] != ' ')
                    k--;
                if (k > 0)
                    n = k;
            }
            Draw_textn(w, y++, in.x + 1, cols, t + i, n, A_NORMAL);
            i += n;
        }
        t += len + (nl ? 1 : 0);
        if (!nl)
            break;
    }
}
