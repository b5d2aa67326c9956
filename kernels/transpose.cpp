// out[x][y] = in[y][x] for a rows x cols matrix, through a shared-memory tile.
// 2-D grid; the workgroup is TILE x TILE; the tile lives in dynamic shared
// memory of TILE*(TILE+1) floats (the +1 column avoids bank conflicts), so the
// launch must ask for that many bytes.
#include "lrrt_kernel.h"

LRRT_KERNEL(transpose_f32, (const float*, in), (float*, out), (uint32_t, rows), (uint32_t, cols)) {
  LRRT_DYNAMIC_SHARED(float, tile);
  LRRT_FOR_EACH_THREAD {
    const uint32_t tile_w = LRRT_GROUP_SIZE_X + 1;
    uint32_t x = LRRT_GROUP_ID_X * LRRT_GROUP_SIZE_X + LRRT_LOCAL_ID_X;  // column
    uint32_t y = LRRT_GROUP_ID_Y * LRRT_GROUP_SIZE_Y + LRRT_LOCAL_ID_Y;  // row
    if (x < cols && y < rows) tile[LRRT_LOCAL_ID_Y * tile_w + LRRT_LOCAL_ID_X] = in[(uint64_t)y * cols + x];
  }
  LRRT_BARRIER;
  LRRT_FOR_EACH_THREAD {
    const uint32_t tile_w = LRRT_GROUP_SIZE_X + 1;
    // Swap the block coordinates; read the tile transposed.
    uint32_t x = LRRT_GROUP_ID_Y * LRRT_GROUP_SIZE_Y + LRRT_LOCAL_ID_X;  // column of out (a row of in)
    uint32_t y = LRRT_GROUP_ID_X * LRRT_GROUP_SIZE_X + LRRT_LOCAL_ID_Y;  // row of out (a column of in)
    if (x < rows && y < cols) out[(uint64_t)y * rows + x] = tile[LRRT_LOCAL_ID_X * tile_w + LRRT_LOCAL_ID_Y];
  }
}
